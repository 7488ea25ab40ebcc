"""Word-embedding topic coherence (FedNMF+MI paper Eq. 4; Fang et al. 2016).

C(topic) = 2 / (N(N − 1)) · Σ_{i<j} cos(w_i, w_j) over the topic's top N words. Words without a vector are
left out of their topic's pairs (the paper does not say; dropping them is what gensim-style implementations do),
and a topic with fewer than two such words scores NaN and is left out of the mean, with the count reported.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedtopic.eval.embeddings import WordVectors


def we_coherence(topics: Sequence[Sequence[str]], vectors: WordVectors) -> tuple[float, np.ndarray]:
    """(mean over scorable topics, per-topic scores float64[K] with NaN where < 2 words have vectors)."""
    scores = np.full(len(topics), np.nan)
    for t, words in enumerate(topics):
        rows = vectors.rows(list(words))
        rows = rows[rows >= 0]
        n = len(rows)
        if n < 2:
            continue
        e = vectors.unit[rows].astype(np.float64)
        sims = e @ e.T
        scores[t] = (sims.sum() - np.trace(sims)) / (n * (n - 1))
    finite = scores[np.isfinite(scores)]
    return (float(finite.mean()) if finite.size else float("nan")), scores
