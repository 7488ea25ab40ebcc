"""Tiny synthetic LDA corpora with known Φ for the models tests (numpy only)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from fedtopic.corpus.types import Corpus


def synthetic_lda(n_docs: int, doc_len: int, n_words: int, n_topics: int, seed: int,
                  alpha: float = 0.1, beta: float = 0.05) -> tuple[Corpus, np.ndarray]:
    """(corpus, true Φ float64[K,V]) drawn from the LDA generative process."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(n_words, beta), size=n_topics)
    words = []
    for _ in range(n_docs):
        theta = rng.dirichlet(np.full(n_topics, alpha))
        z = rng.choice(n_topics, size=doc_len, p=theta)
        words.append([rng.choice(n_words, p=phi[k]) for k in z])
    flat = np.asarray(words, dtype=np.int32).ravel()
    ptr = np.arange(n_docs + 1, dtype=np.int64) * doc_len
    return Corpus(words=flat, doc_ptr=ptr, vocab=tuple(f"w{v}" for v in range(n_words))), phi


def topic_l1_error(phi_true: np.ndarray, phi_hat: np.ndarray) -> float:
    """Mean L1 distance between true and estimated topics after the best one-to-one matching."""
    cost = np.abs(phi_true[:, None, :] - phi_hat[None, :, :]).sum(axis=2)
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].mean())


def synthetic_sentence_lda(n_docs: int, sentences: int, sentence_len: int, n_words: int, n_topics: int, seed: int,
                           alpha: float = 0.1, beta: float = 0.05) -> tuple[Corpus, np.ndarray]:
    """(corpus with sentence boundaries, true Φ) from SentenceLDA's generative process: one topic per sentence."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(n_words, beta), size=n_topics)
    words = []
    for _ in range(n_docs):
        theta = rng.dirichlet(np.full(n_topics, alpha))
        for k in rng.choice(n_topics, size=sentences, p=theta):
            words += list(rng.choice(n_words, size=sentence_len, p=phi[k]))
    flat = np.asarray(words, dtype=np.int32)
    doc_ptr = np.arange(n_docs + 1, dtype=np.int64) * sentences * sentence_len
    sent_ptr = np.arange(n_docs * sentences + 1, dtype=np.int64) * sentence_len
    return Corpus(words=flat, doc_ptr=doc_ptr, vocab=tuple(f"w{v}" for v in range(n_words)), sent_ptr=sent_ptr), phi
