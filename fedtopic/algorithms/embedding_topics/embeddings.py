"""A party's document embeddings (unit rows), computed where the documents are and never sent.

``minilm``: all-MiniLM-L6-v2 from its pinned wheel (``neural.sentence_embeddings``: 384 values, the model BERTopic
uses by default; cached per document under the digest of its text, so a second run embeds nothing again).
``hashed``: log(1 + counts) projected by a seeded Gaussian matrix [V, 256] (Johnson–Lindenstrauss), the same for
every party of a consortium (its vocabulary and seed are shared): no model, no torch; a stand-in for machines
without the neural extra, and the suite's fast path. A document without words embeds as the zero vector; the
clustering leaves it out.
"""

from __future__ import annotations

import numpy as np

from fedtopic.algorithms.embedding_topics.clustering import unit_rows
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ConfigError

METHODS = ("minilm", "hashed")
HASHED_WIDTH = 256


def embed(corpus: Corpus, method: str, seed: int, counts: dict[str, int] | None = None) -> np.ndarray:
    """float64[D, d] unit-length embeddings of ``corpus``'s documents (zero rows for empty documents); ``counts``
    receives minilm's ``embedded`` (now) and ``cached`` texts."""
    if method == "minilm":
        try:
            from fedtopic.neural.sentence_embeddings import embed_corpus
        except ImportError as exc:  # torch / sentence-transformers: the neural extra
            raise ConfigError(f"embedding=minilm needs fedtopic[neural] ({exc.name} is missing): install it, or "
                              "use --opt embedding=hashed") from None
        x = embed_corpus(corpus, counts=counts).astype(np.float64)
    elif method == "hashed":
        from fedtopic.models.nnls import counts_matrix

        counts = counts_matrix(corpus)
        counts.data = np.log1p(counts.data)
        projection = np.random.default_rng([seed, corpus.n_words]).standard_normal((corpus.n_words, HASHED_WIDTH))
        x = np.asarray(counts @ projection)
    else:
        raise ConfigError(f"embedding must be one of {', '.join(METHODS)}, got {method!r}")
    x[np.diff(corpus.doc_ptr) == 0] = 0.0
    return unit_rows(x)
