"""Model inversion under δ-IPHE / δ-UPHE (CSFed/DAFed paper §6.4, Def. 2, Eqs. 5, 13–15)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fedtopic.corpus.types import Corpus
from fedtopic.errors import EvalError
from fedtopic.eval.attacks import (
    inverted_counts,
    inverted_phi,
    model_privacy_eta,
    new_user_preferences,
    protected_words,
    word_frequencies,
    word_preferences,
    zeta_direct,
    zeta_eq15,
)
from fedtopic.eval.perplexity import completion_perplexity
from fedtopic.models.distributions import phi_from_counts
from fedtopic.models.lda import GibbsLDA

V, K, ALPHA, BETA = 1000, 8, 0.5, 0.01
DELTAS = (0.0, 0.001, 0.005, 0.01, 0.05)  # Fig. 9's δ grid as fractions


def _zipf_topics(seed: int) -> np.ndarray:
    """Φ [K,V]: half a shared Zipf(1.1) law (global frequencies are Zipfian), half a topic-own permuted one."""
    rng = np.random.default_rng(seed)
    zipf = 1.0 / np.arange(1, V + 1) ** 1.1
    zipf /= zipf.sum()
    return np.array([0.5 * zipf + 0.5 * zipf[rng.permutation(V)] for _ in range(K)])


def _lda_corpus(phi: np.ndarray, n_docs: int, doc_len: int, seed: int) -> Corpus:
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.full(K, 0.1), size=n_docs)
    z = (rng.random((n_docs, doc_len))[..., None] > np.cumsum(theta, 1)[:, None, :]).sum(-1).clip(0, K - 1)
    w = (rng.random((n_docs, doc_len))[..., None] > np.cumsum(phi, 1)[z]).sum(-1).clip(0, V - 1)
    ptr = np.arange(n_docs + 1, dtype=np.int64) * doc_len
    return Corpus(words=w.ravel().astype(np.int32), doc_ptr=ptr, vocab=tuple(f"w{i}" for i in range(V)))


@pytest.fixture(scope="module")
def trained():
    phi = _zipf_topics(0)
    train, test = _lda_corpus(phi, 500, 60, 1), _lda_corpus(phi, 200, 60, 2)
    n_sum = GibbsLDA(K, alpha=ALPHA, beta=BETA, seed=0).fit(train, 40).state.n_wk
    return train, test, n_sum


def _eta(n_sum, hidden, test, knowledge="visible-only"):
    real = completion_perplexity(phi_from_counts(n_sum, BETA), test, ALPHA, iterations=20)
    inv = completion_perplexity(inverted_phi(n_sum, hidden, BETA, knowledge), test, ALPHA, iterations=20)
    return model_privacy_eta(inv, real)


def test_delta_zero_gives_the_real_model_and_eta_zero(trained):
    train, test, n_sum = trained
    hidden = protected_words(word_frequencies(train), 0.0, "iphe")
    assert len(hidden) == 0
    for knowledge in ("visible-only", "known-frequencies"):
        assert np.array_equal(inverted_phi(n_sum, hidden, BETA, knowledge), phi_from_counts(n_sum, BETA))
        assert _eta(n_sum, hidden, test, knowledge) == 0.0


def test_iphe_eta_grows_with_delta_and_beats_uphe(trained):
    train, test, n_sum = trained
    freq = word_frequencies(train)
    iphe = [_eta(n_sum, protected_words(freq, d, "iphe"), test) for d in DELTAS]
    uphe = [_eta(n_sum, protected_words(freq, d, "uphe"), test) for d in DELTAS]
    assert all(a < b for a, b in itertools.pairwise(iphe)), iphe
    assert all(i > u + 0.1 for i, u in zip(iphe[1:], uphe[1:])), (iphe, uphe)
    # the stronger attacker who knows the hidden words' frequencies still loses their topic split
    known = [_eta(n_sum, protected_words(freq, d, s), test, "known-frequencies") for s in ("iphe", "uphe") for d in (0.05,)]
    assert known[0] > 0.05 and known[0] > known[1] + 0.05, known


def test_hidden_words_get_exactly_the_uniform_preference(trained):
    train, _, n_sum = trained
    hidden = protected_words(word_frequencies(train), 0.01, "iphe")
    for knowledge in ("visible-only", "known-frequencies"):
        counts = inverted_counts(n_sum, hidden, knowledge)
        phi = phi_from_counts(counts, BETA)
        weights = counts.sum(axis=0) + V * BETA  # topic weights under which Eq. 9 gives p(k|w) ∝ N_wk + β
        pref = phi[:, hidden] * weights[:, None]
        np.testing.assert_allclose(pref / pref.sum(axis=0), 1.0 / K, rtol=1e-12)
        visible = np.setdiff1d(np.arange(V), hidden)
        assert np.array_equal(counts[visible], n_sum[visible])
    known = inverted_counts(n_sum, hidden, "known-frequencies")
    np.testing.assert_allclose(known[hidden].sum(axis=1), n_sum[hidden].sum(axis=1))


def test_zeta_eq15_equals_the_direct_computation(trained):
    train, test, n_sum = trained
    pref = word_preferences(n_sum, BETA)
    theta = new_user_preferences(pref, test)
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    hidden = protected_words(word_frequencies(train), 0.01, "iphe")
    np.testing.assert_allclose(zeta_eq15(pref, hidden, test), zeta_direct(pref, hidden, test), rtol=1e-10, atol=1e-15)
    # one hidden word: Eq. 15 exactly as printed, (1/L) n_f |φ_f − κ|_2
    f = int(hidden[0])
    n_f = np.add.reduceat((test.words == f).astype(float), test.doc_ptr[:-1])
    printed = n_f * np.linalg.norm(pref[f] - 1.0 / K) / test.doc_lengths()
    np.testing.assert_allclose(zeta_direct(pref, np.array([f]), test), printed, rtol=1e-10, atol=1e-15)
    assert printed.max() > 0


def test_protected_sets_are_top_and_bottom_by_frequency():
    freq = np.array([5, 9, 1, 9, 0, 3, 7, 2, 8, 4])
    assert protected_words(freq, 0.3, "iphe").tolist() == [1, 3, 8]  # ⌈0.3·10⌉ = 3 most frequent
    assert protected_words(freq, 0.3, "uphe").tolist() == [2, 4, 7]
    assert protected_words(freq, 0.05, "iphe").tolist() == [1]  # ⌈0.5⌉ = 1, tie 9/9 to the lower index
    assert len(protected_words(freq, 1.0, "uphe")) == 10


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: protected_words(np.ones(4), 1.5, "iphe"), "delta"),
        (lambda: protected_words(np.ones(4), 0.5, "rot13"), "scheme"),
        (lambda: inverted_counts(np.ones((4, 2)), np.array([7]), "visible-only"), "outside"),
        (lambda: inverted_counts(np.ones((4, 2)), np.array([1, 1]), "visible-only"), "distinct"),
        (lambda: inverted_counts(-np.ones((4, 2)), np.array([1]), "visible-only"), "negative"),
        (lambda: inverted_counts(np.ones((4, 2)), np.array([1]), "psychic"), "knowledge"),
        (lambda: model_privacy_eta(10.0, 0.0), "positive"),
    ],
)
def test_bad_input_is_an_eval_error(call, message):
    with pytest.raises(EvalError, match=message):
        call()
