"""DAFed-LDA's learned priors: a party's document-topic histograms published below its counts N_p.

DAFed has no aggregator to sum through, so each party's histograms (``models.hyperopt.DocTopicHistogram``: what
Minka's fixed point needs) travel in its own channel, as rows appended to N_p int32[V, K]: the K + 1 histogram
rows of the public ``width`` (``optim_width``), flattened and cut into rows of K cells. A reader sums the latest
histograms it may read with its own, as it sums N_Σ (Eq. 8), and learns α from them; the channel's codec keeps
only non-zero cells, so the rows cost little. A document-topic count or a length of ``width`` tokens or more is
counted in the last column (the summary says how many documents, ``optim_clipped_documents``): exact below the
width, an approximation above.
"""

from __future__ import annotations

import numpy as np

from fedtopic.models.hyperopt import DocTopicHistogram


def extra_rows(n_topics: int, width: int) -> int:
    """Rows of K cells the (K + 1) × width histogram cells take below N_p."""
    return -(-(n_topics + 1) * width // n_topics)


def clip(histogram: DocTopicHistogram, width: int) -> tuple[DocTopicHistogram, int]:
    """(the histograms in ``width`` columns, documents of ``width`` or more tokens whose counts were clipped)."""
    own = histogram.lengths.shape[0]
    if own <= width:
        pad = width - own
        return DocTopicHistogram(np.pad(histogram.topic_counts, ((0, 0), (0, pad))),
                                 np.pad(histogram.lengths, (0, pad))), 0
    topic_counts = histogram.topic_counts[:, :width].copy()
    topic_counts[:, -1] += histogram.topic_counts[:, width:].sum(axis=1)
    lengths = histogram.lengths[:width].copy()
    clipped = int(histogram.lengths[width:].sum())
    lengths[-1] += clipped
    return DocTopicHistogram(topic_counts, lengths), clipped


def pack(histogram: DocTopicHistogram, width: int) -> np.ndarray:
    """int32[extra_rows, K]: ``clip``ped histograms of ``width`` columns as rows of K cells."""
    n_topics = histogram.topic_counts.shape[0]
    cells = np.concatenate([histogram.topic_counts.reshape(-1), histogram.lengths])
    rows = np.zeros(extra_rows(n_topics, width) * n_topics, dtype=np.int32)
    rows[: cells.size] = cells
    return rows.reshape(-1, n_topics)


def unpack(rows: np.ndarray, width: int) -> DocTopicHistogram:
    """The histograms of ``pack``'s rows (int[extra_rows, K])."""
    n_topics = rows.shape[1]
    cells = np.asarray(rows, dtype=np.int64).reshape(-1)
    return DocTopicHistogram(cells[: n_topics * width].reshape(n_topics, width),
                             cells[n_topics * width: (n_topics + 1) * width])
