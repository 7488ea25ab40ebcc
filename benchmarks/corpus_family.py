"""A family of LDA corpora for tuning the samplers on shapes nobody tuned for (issue 47 item 3).

    from corpus_family import SHAPES, family_corpus

Each corpus follows LDA's generative process with as many true topics as K: Φ ~ Dir(topic_beta) over V words,
θ_d ~ Dir(true_alpha) (per topic), document lengths uniform in [min_len, max_len]. The shapes span the ranges
the issue names (V 5k–50k, documents of 20–1,000 tokens, true α 0.01–0.5); K is the run's. Generated word by
topic in one vectorised pass, so a few million tokens take seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedtopic.corpus.types import Corpus


@dataclass(frozen=True)
class Shape:
    """One corpus shape: vocabulary, document lengths (inclusive range), true per-topic α of θ."""

    vocabulary: int
    min_len: int
    max_len: int
    true_alpha: float
    topic_beta: float = 0.01


SHAPES: dict[str, Shape] = {
    # the hidden corpus: V 8,000, true α 0.01, documents of 100–200 tokens
    "hidden": Shape(8000, 100, 200, 0.01),
    "short-sparse": Shape(5000, 20, 40, 0.01),
    # wider vocabularies with topics as concentrated as the hidden corpus's (≈ 80 words' worth: topic_beta = 80/V)
    "short-wide": Shape(20000, 20, 60, 0.01, topic_beta=0.004),
    "long-wide": Shape(50000, 500, 1000, 0.01, topic_beta=0.0016),
    "mixed-lengths": Shape(10000, 20, 1000, 0.02, topic_beta=0.008),
    # the widest vocabulary with short documents (session 37)
    "short-vast": Shape(50000, 20, 100, 0.01, topic_beta=0.0016),
    # no target on 1M tokens at K 1,000 (tomotopy's perplexity does not fall from sweep 10 to 200, bench_mh.py
    # prints its curve): true α 0.1 and 0.5 (100 and 500 topics' worth a document), and Φ ~ Dir(0.01) over 20,000
    # words (200 words' worth a topic)
    "short-diffuse": Shape(20000, 20, 60, 0.1),
    "medium-diffuse": Shape(10000, 100, 300, 0.5),
    "short-wide-flat": Shape(20000, 20, 60, 0.01),
    "mixed-flat": Shape(10000, 20, 1000, 0.05),
    # true α 0.05 with topics as concentrated as mixed-lengths' (10,268 at 10 sweeps, 10,396 at 200; session 37)
    "medium-alpha": Shape(10000, 100, 300, 0.05, topic_beta=0.008),
}


def family_corpus(shape: Shape, n_tokens: int, n_topics: int, seed: int) -> Corpus:
    """About n_tokens tokens of `shape` with n_topics true topics; the same seed gives the same corpus."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(shape.vocabulary, shape.topic_beta), size=n_topics)
    n_docs = max(2, round(n_tokens / ((shape.min_len + shape.max_len) / 2)))
    lengths = rng.integers(shape.min_len, shape.max_len + 1, size=n_docs)
    z = np.empty(int(lengths.sum()), dtype=np.int64)
    ptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    for d in range(n_docs):
        cum = np.cumsum(rng.dirichlet(np.full(n_topics, shape.true_alpha)))
        z[ptr[d]:ptr[d + 1]] = np.searchsorted(cum, rng.random(lengths[d]) * cum[-1], side="right")
    np.clip(z, 0, n_topics - 1, out=z)
    words = np.empty(len(z), dtype=np.int32)
    order = np.argsort(z, kind="stable")
    bounds = np.searchsorted(z[order], np.arange(n_topics + 1))
    u = rng.random(len(z))
    for k in range(n_topics):
        at = order[bounds[k]:bounds[k + 1]]
        cum = np.cumsum(phi[k])
        words[at] = np.minimum(np.searchsorted(cum, u[at] * cum[-1], side="right"), shape.vocabulary - 1)
    return Corpus(words=words, doc_ptr=ptr, vocab=tuple(f"w{v}" for v in range(shape.vocabulary)))
