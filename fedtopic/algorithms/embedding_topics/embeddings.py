"""A party's document embeddings (unit rows), computed where the documents are and never sent.

``minilm``: all-MiniLM-L6-v2 from its pinned wheel (``neural.sentence_embeddings``: 384 values, the model BERTopic
uses by default; cached per document under the digest of its text, so a second run embeds nothing again).
``hashed``: log(1 + counts) projected by a seeded Gaussian matrix [V, 256] (Johnson–Lindenstrauss), the same for
every party of a consortium (its vocabulary and seed are shared): no model, no torch; a stand-in for machines
without the neural extra, and the suite's fast path. A document without words embeds as the zero vector; the
clustering leaves it out.

``embed_words``: the vocabulary's words in the same space (each word embedded as a one-word document; hashed: its
row of the projection), for KeyBERT's keywords under DP (``dp.keywords``).
"""

from __future__ import annotations

import threading

import numpy as np

from fedtopic.algorithms.embedding_topics.clustering import unit_rows
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ConfigError

METHODS = ("minilm", "hashed")
_WORDS_LOCK = threading.Lock()  # the parties of one process (simulate) embed the shared vocabulary once
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
        x = np.asarray(counts @ _projection(corpus.n_words, seed))
    else:
        raise ConfigError(f"embedding must be one of {', '.join(METHODS)}, got {method!r}")
    x[np.diff(corpus.doc_ptr) == 0] = 0.0
    return unit_rows(x)


def _projection(n_words: int, seed: int) -> np.ndarray:
    return np.random.default_rng([seed, n_words]).standard_normal((n_words, HASHED_WIDTH))


def embed_words(vocab: tuple[str, ...] | list[str], method: str, seed: int) -> np.ndarray:
    """float64[V, d] unit embeddings of the vocabulary's words in the space ``embed`` puts documents in (minilm:
    each word as a text, through the same per-text cache; hashed: its row of the seeded projection)."""
    if method == "minilm":
        from fedtopic.neural.sentence_embeddings import embed_cached

        with _WORDS_LOCK:  # the first party embeds and caches; the others read the cache
            return unit_rows(embed_cached(list(vocab)).astype(np.float64))
    if method == "hashed":
        return unit_rows(_projection(len(vocab), seed))
    raise ConfigError(f"embedding must be one of {', '.join(METHODS)}, got {method!r}")
