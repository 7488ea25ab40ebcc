"""Held-out perplexity: document completion and the CSFed/DAFed paper's Eq. 16."""

from __future__ import annotations

import numpy as np
import pytest

from fedtopic.corpus.types import Corpus
from fedtopic.errors import EvalError
from fedtopic.eval.perplexity import completion_perplexity, eq16_perplexity
from fedtopic.models.foldin import fold_in

K, V, D, L, ALPHA = 5, 200, 200, 300, 0.5


def _vocab(v: int) -> tuple[str, ...]:
    return tuple(f"w{i}" for i in range(v))


def _lda_corpus(seed: int = 0):
    """Synthetic LDA data: true Φ [K,V], θ [D,K] and D documents of L tokens."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(V, 0.05), size=K)
    theta = rng.dirichlet(np.full(K, ALPHA), size=D)
    doc = np.repeat(np.arange(D), L)
    z = (np.cumsum(theta, axis=1)[doc] < rng.random(D * L)[:, None]).sum(axis=1)
    words = (np.cumsum(phi, axis=1)[z] < rng.random(D * L)[:, None]).sum(axis=1)
    words = np.minimum(words, V - 1).astype(np.int32)
    corpus = Corpus(words, np.arange(0, D * L + 1, L, dtype=np.int64), _vocab(V))
    return phi, theta, corpus


@pytest.fixture(scope="module")
def lda():
    return _lda_corpus()


def test_true_phi_is_close_to_the_analytic_perplexity(lda):
    phi, theta, corpus = lda
    p = theta @ phi  # [D,V] true predictive distribution of each document
    analytic = np.exp(-(p * np.log(p)).sum(axis=1).mean())  # exp(expected log-loss per token)
    got = completion_perplexity(phi, corpus, ALPHA)
    assert analytic <= got <= 1.03 * analytic


def test_true_phi_beats_a_random_phi(lda):
    phi, _, corpus = lda
    random_phi = np.random.default_rng(9).dirichlet(np.full(V, 0.05), size=K)
    assert completion_perplexity(phi, corpus, ALPHA) < 0.2 * completion_perplexity(random_phi, corpus, ALPHA)


def test_uniform_phi_has_perplexity_v(lda):
    _, _, corpus = lda
    uniform = np.full((K, V), 1.0 / V)
    assert completion_perplexity(uniform, corpus, ALPHA) == pytest.approx(V, rel=1e-12)
    assert eq16_perplexity(uniform, corpus, ALPHA) == pytest.approx(V, rel=1e-12)


def test_eq16_is_optimistic_relative_to_completion(lda):
    phi, _, corpus = lda
    completion = completion_perplexity(phi, corpus, ALPHA)
    eq16 = eq16_perplexity(phi, corpus, ALPHA)
    assert eq16 < completion
    # with 150 fold-in tokens per document the optimism is small but real
    assert eq16 > 0.95 * completion


def test_completion_matches_a_hand_split_and_skips_short_documents():
    rng = np.random.default_rng(4)
    phi = rng.dirichlet(np.full(12, 0.5), size=3)
    docs = [rng.integers(0, 12, size=n).astype(np.int32) for n in (7, 1, 0, 4, 10)]
    corpus = Corpus(
        np.concatenate(docs),
        np.concatenate([[0], np.cumsum([len(d) for d in docs])]).astype(np.int64),
        _vocab(12),
    )
    kept = [d for d in docs if len(d) >= 2]
    first = [d[: len(d) // 2] for d in kept]
    ptr = np.concatenate([[0], np.cumsum([len(f) for f in first])]).astype(np.int64)
    theta = fold_in(phi, np.concatenate(first), ptr, 0.3, iterations=20, seed=3)
    logs = [np.log(theta[i] @ phi[:, w]) for i, d in enumerate(kept) for w in d[len(d) // 2 :]]
    want = np.exp(-np.mean(logs))
    got = completion_perplexity(phi, corpus, 0.3, iterations=20, seed=3)
    assert got == pytest.approx(want, rel=1e-12)


def test_eq16_matches_the_formula_on_whole_documents():
    rng = np.random.default_rng(5)
    phi = rng.dirichlet(np.full(10, 0.5), size=4)
    words = rng.integers(0, 10, size=30).astype(np.int32)
    ptr = np.array([0, 12, 12, 30], dtype=np.int64)
    corpus = Corpus(words, ptr, _vocab(10))
    theta = fold_in(phi, words, ptr, 0.2, iterations=10, seed=1)
    doc = np.repeat(np.arange(3), np.diff(ptr))
    want = np.exp(-np.mean([np.log(theta[d] @ phi[:, w]) for d, w in zip(doc, words)]))
    assert eq16_perplexity(phi, corpus, 0.2, iterations=10, seed=1) == pytest.approx(want, rel=1e-12)


def test_bad_inputs_raise_eval_error():
    phi = np.full((2, 5), 0.2)
    empty = Corpus(np.zeros(0, np.int32), np.zeros(1, np.int64), _vocab(5))
    with pytest.raises(EvalError, match="no tokens"):
        completion_perplexity(phi, empty, 0.1)
    with pytest.raises(EvalError, match="no tokens"):
        eq16_perplexity(phi, empty, 0.1)
    singletons = Corpus(np.array([1, 2], np.int32), np.array([0, 1, 2], np.int64), _vocab(5))
    with pytest.raises(EvalError, match="2 or more tokens"):
        completion_perplexity(phi, singletons, 0.1)
    wider = Corpus(np.array([1, 6], np.int32), np.array([0, 2], np.int64), _vocab(7))
    with pytest.raises(EvalError, match="vocabulary"):
        completion_perplexity(phi, wider, 0.1)
    with pytest.raises(EvalError, match="sum to 1"):
        eq16_perplexity(phi * 3, singletons, 0.1)
    with pytest.raises(EvalError, match="alpha"):
        eq16_perplexity(phi, singletons, -1.0)
