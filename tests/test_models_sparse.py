"""The alias-MH (large-K) sampler: exact conditional (chi-square vs Eq. 10) and ground-truth recovery."""

import numpy as np
import pytest
from scipy.stats import chisquare

from _lda_synth import synthetic_lda, topic_l1_error
from fedtopic.models._alias import build_word_alias
from fedtopic.models._mh import mh_conditional_draws
from fedtopic.models.gibbs import sweep
from fedtopic.models.lda import GibbsLDA
from fedtopic.models.reference import conditional
from fedtopic.models.state import init_state

K, ALPHA, BETA = 8, 0.3, 0.05


@pytest.fixture(scope="module")
def setup():
    """A state after a few sweeps, token i's counts removed; stale tables from the initial counts + frozen."""
    corpus = synthetic_lda(n_docs=30, doc_len=40, n_words=50, n_topics=4, seed=8)[0]
    state = init_state(corpus.words, corpus.doc_ptr, corpus.n_words, K, 4)
    frozen = np.random.default_rng(2).integers(0, 20, size=(corpus.n_words, K)).astype(np.int32)
    stale_wk, stale_k = state.n_wk + frozen, state.n_k + frozen.sum(0)
    for _ in range(3):
        sweep(state, corpus.words, corpus.doc_ptr, ALPHA, BETA, sampler="dense")
    i, d = 47, 1  # token 47 lies in document 1
    w, k0 = corpus.words[i], state.z[i]
    state.n_dk[d, k0] -= 1
    state.n_wk[w, k0] -= 1
    state.n_k[k0] -= 1
    return corpus, state, frozen, (stale_wk, stale_k), (i, d, w)


def _draws(setup, start, mh_steps, with_frozen):
    corpus, state, frozen, (stale_wk, stale_k), (i, d, w) = setup
    f_wk = frozen if with_frozen else np.zeros_like(frozen)
    tot_wk, tot_k = state.n_wk + f_wk, state.n_k + f_wk.sum(0)
    vbeta = corpus.n_words * BETA
    tables = build_word_alias(stale_wk, stale_k, BETA, vbeta)
    rng = state.rng.copy()
    got = mh_conditional_draws(
        len(start), start, i, w, d, corpus.words, corpus.doc_ptr, state.z, state.n_dk, tot_wk, tot_k,
        stale_wk, stale_k, *tables, ALPHA, BETA, vbeta, mh_steps, rng, 0,
    )
    target = conditional(state.n_dk[d].astype(float), tot_wk[w].astype(float), tot_k.astype(float), ALPHA, BETA, vbeta)
    return np.bincount(got, minlength=K), target / target.sum()


@pytest.mark.parametrize("with_frozen", [False, True])
def test_one_mh_cycle_leaves_eq10_invariant(setup, with_frozen):
    """Start from exact draws of Eq. 10, apply one (word, doc) cycle: still Eq. 10 (chi-square)."""
    _, target = _draws(setup, np.zeros(1, np.int32), 1, with_frozen)
    start = np.random.default_rng(0).choice(K, size=40_000, p=target).astype(np.int32)
    observed, target = _draws(setup, start, 1, with_frozen)
    assert chisquare(observed, observed.sum() * target).pvalue > 1e-3
    # the test has power: the conditional without the frozen counts is rejected (and vice versa)
    _, wrong = _draws(setup, start, 1, not with_frozen)
    assert chisquare(observed, observed.sum() * wrong).pvalue < 1e-6


def test_mh_chain_converges_to_eq10_from_a_fixed_start(setup):
    observed, target = _draws(setup, np.full(30_000, 5, np.int32), 12, True)
    assert chisquare(observed, observed.sum() * target).pvalue > 1e-3


def test_sparse_recovers_ground_truth_about_as_well_as_dense():
    corpus, phi_true = synthetic_lda(n_docs=150, doc_len=60, n_words=80, n_topics=5, seed=21)
    errors = {}
    for sampler in ("dense", "sparse"):
        model = GibbsLDA(5, alpha=0.1, beta=0.05, sampler=sampler, seed=1).fit(corpus, 150)
        errors[sampler] = topic_l1_error(phi_true, model.phi())
    random_error = topic_l1_error(phi_true, np.random.default_rng(0).dirichlet(np.ones(80), size=5))
    assert errors["dense"] < 0.25 * random_error
    assert errors["sparse"] < 0.25 * random_error
    assert errors["sparse"] < 1.3 * errors["dense"] + 0.02, errors
