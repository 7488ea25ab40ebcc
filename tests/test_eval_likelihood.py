"""Collapsed log p(w, z) per token vs the chain rule of the Pólya urns, token by token."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedtopic.errors import EvalError
from fedtopic.eval.likelihood import log_likelihood_per_token


def _chain_rule(words, docs, z, n_words, n_topics, alpha, beta):
    """log p(w, z) as Π_i p(z_i | z_<i) p(w_i | z_≤i, w_<i) — exchangeability makes it the joint."""
    n_wk = np.zeros((n_words, n_topics))
    n_dk = np.zeros((docs.max() + 1, n_topics))
    total = 0.0
    for w, d, k in zip(words, docs, z):
        total += math.log((n_dk[d, k] + alpha) / (n_dk[d].sum() + n_topics * alpha))
        total += math.log((n_wk[w, k] + beta) / (n_wk[:, k].sum() + n_words * beta))
        n_wk[w, k] += 1
        n_dk[d, k] += 1
    return total / len(words)


def _state(seed=0, n_words=15, n_topics=4, n_docs=5, n_tokens=120):
    rng = np.random.default_rng(seed)
    words = rng.integers(0, n_words, n_tokens)
    docs = np.sort(rng.integers(0, n_docs, n_tokens))
    docs[-1] = n_docs - 1
    z = rng.integers(0, n_topics, n_tokens)
    n_wk = np.zeros((n_words, n_topics), dtype=np.int64)
    n_dk = np.zeros((n_docs, n_topics), dtype=np.int32)
    np.add.at(n_wk, (words, z), 1)
    np.add.at(n_dk, (docs, z), 1)
    return words, docs, z, n_wk, n_dk


@pytest.mark.parametrize("alpha, beta", [(0.1, 0.01), (1.0, 0.5), (5.0, 2.0)])
def test_matches_the_token_by_token_chain_rule(alpha, beta):
    words, docs, z, n_wk, n_dk = _state()
    want = _chain_rule(words, docs, z, *n_wk.shape, alpha, beta)
    assert log_likelihood_per_token(n_wk, n_dk, alpha, beta) == pytest.approx(want, rel=1e-10)


def test_concentrated_assignments_score_higher_than_scattered():
    words, docs, _, n_wk, n_dk = _state(seed=1)
    z_good = words % 4  # each word always in the same topic
    good_wk = np.zeros_like(n_wk)
    good_dk = np.zeros_like(n_dk)
    np.add.at(good_wk, (words, z_good), 1)
    np.add.at(good_dk, (docs, z_good), 1)
    assert log_likelihood_per_token(good_wk, good_dk, 0.1, 0.01) > log_likelihood_per_token(n_wk, n_dk, 0.1, 0.01)


def test_bad_inputs_raise_eval_error():
    _, _, _, n_wk, n_dk = _state()
    with pytest.raises(EvalError, match="tokens"):
        log_likelihood_per_token(n_wk, n_dk[1:], 0.1, 0.01)
    with pytest.raises(EvalError, match="alpha and beta"):
        log_likelihood_per_token(n_wk, n_dk, 0.0, 0.01)
    with pytest.raises(EvalError, match=r"\[V,K\]"):
        log_likelihood_per_token(n_wk, n_dk[:, :2], 0.1, 0.01)
    with pytest.raises(EvalError, match="no tokens"):
        log_likelihood_per_token(n_wk * 0, n_dk * 0, 0.1, 0.01)
