"""The alias-MH (large-K) sampler: exact conditional (chi-square vs Eq. 10) and ground-truth recovery."""

import numpy as np
import pytest
from _lda_synth import synthetic_lda, topic_l1_error
from scipy.stats import chisquare

from fedtopic.models import gibbs
from fedtopic.models._alias import build_word_alias
from fedtopic.models._mh import mh_conditional_draws
from fedtopic.models.gibbs import sweep
from fedtopic.models.lda import GibbsLDA
from fedtopic.models.reference import conditional
from fedtopic.models.state import init_state

K, ALPHA, BETA = 8, 0.3, 0.05


@pytest.fixture(scope="module")
def setup():
    """Token i's counts removed from the live state; older totals (+ frozen) of the *other* tokens for the tables."""
    corpus = synthetic_lda(n_docs=30, doc_len=40, n_words=400, n_topics=4, seed=8)[0]
    state = init_state(corpus.words, corpus.doc_ptr, corpus.n_words, K, 4)
    frozen = np.random.default_rng(2).integers(0, 3, size=(corpus.n_words, K)).astype(np.int32)
    # a word seen once, nowhere else: token i's own stale count dominates its word proposal
    i = int(np.flatnonzero(np.bincount(corpus.words, minlength=corpus.n_words)[corpus.words] == 1)[0])
    d = int(np.searchsorted(corpus.doc_ptr, i, side="right") - 1)
    w = corpus.words[i]
    frozen[w] = 0
    old_wk, old_k = state.n_wk + frozen, state.n_k + frozen.sum(0)
    old_wk[w, state.z[i]] -= 1
    old_k[state.z[i]] -= 1
    for _ in range(3):  # the other tokens move on
        sweep(state, corpus.words, corpus.doc_ptr, ALPHA, BETA, sampler="dense")
    k_now = state.z[i]
    state.n_dk[d, k_now] -= 1
    state.n_wk[w, k_now] -= 1
    state.n_k[k_now] -= 1
    return corpus, state, frozen, (old_wk, old_k), (i, d, w)


def _draws(setup, start, mh_steps, with_frozen):
    """(topic counts after the chain, Eq. 10 target) for chains started at start[r].

    As in a sweep, a chain starting at s0 runs with tables built from totals that hold token i at s0.
    """
    corpus, state, frozen, (old_wk, old_k), (i, d, w) = setup
    f_wk = frozen if with_frozen else np.zeros_like(frozen)
    tot_wk, tot_k = state.n_wk + f_wk, state.n_k + f_wk.sum(0)
    vbeta = corpus.n_words * BETA
    rng = state.rng.copy()
    observed = np.zeros(K, dtype=np.int64)
    for s0 in np.unique(start):
        stale_wk, stale_k, z = old_wk.copy(), old_k.copy(), state.z.copy()
        stale_wk[w, s0] += 1
        stale_k[s0] += 1
        z[i] = s0
        tables = build_word_alias(stale_wk, stale_k, BETA, vbeta)
        got = mh_conditional_draws(
            int(np.sum(start == s0)), start[start == s0], i, w, d, z, state.n_dk,
            tot_wk, tot_k, stale_wk, stale_k, *tables, ALPHA, BETA, vbeta, mh_steps, rng, 0,
        )
        observed += np.bincount(got, minlength=K)
    target = conditional(state.n_dk[d].astype(float), tot_wk[w].astype(float), tot_k.astype(float), ALPHA, BETA, vbeta)
    return observed, target / target.sum()


@pytest.mark.parametrize("with_frozen", [False, True])
def test_one_mh_step_leaves_eq10_invariant(setup, with_frozen):
    """Start from exact draws of Eq. 10, apply one MH step: still Eq. 10 (chi-square)."""
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


def test_sparse_recovers_ground_truth_about_as_well_as_dense(monkeypatch):
    corpus, phi_true = synthetic_lda(n_docs=150, doc_len=60, n_words=80, n_topics=5, seed=21)
    errors = {}
    for sampler in ("dense", "sparse"):
        if sampler == "sparse":
            monkeypatch.setattr(gibbs, "DENSE_FRACTION", 1)  # every token through MH
        model = GibbsLDA(5, alpha=0.1, beta=0.05, sampler=sampler, seed=1).fit(corpus, 150)
        errors[sampler] = topic_l1_error(phi_true, model.phi())
    random_error = topic_l1_error(phi_true, np.random.default_rng(0).dirichlet(np.ones(80), size=5))
    assert errors["dense"] < 0.25 * random_error
    assert errors["sparse"] < 0.25 * random_error
    assert errors["sparse"] < 1.3 * errors["dense"] + 0.02, errors
