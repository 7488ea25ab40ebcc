"""The O(1) cycle-MH sampler (sampler="mh", LightLDA): draw for draw against the numpy reference, the exact
posterior left invariant by a whole sweep (chi-square over every state of a tiny corpus), ground truth."""

import itertools

import numba
import numpy as np
import pytest
from _lda_synth import synthetic_lda, topic_l1_error
from scipy.special import gammaln
from scipy.stats import chisquare

from fedtopic.corpus.types import Corpus
from fedtopic.errors import ModelError
from fedtopic.models._cycle_mh import (
    apply_moves,
    cycle_shard,
    scan_order,
    scan_topics,
    shard_visits,
)
from fedtopic.models._parallel import cycle_other, shard_bounds
from fedtopic.models.gibbs import (
    AUTO_DENSE_FROM_LENGTH,
    AUTO_MH_FROM,
    MH_EXACT_BELOW,
    resolve_sampler,
    sweep,
)
from fedtopic.models.lda import GibbsLDA
from fedtopic.models.reference import reference_cycle_sweep
from fedtopic.models.rng import make_rng_states
from fedtopic.models.state import LDAState, counts_from_z, init_state


def _copy(state: LDAState) -> LDAState:
    return LDAState(z=state.z.copy(), n_dk=state.n_dk.copy(), n_wk=state.n_wk.copy(), n_k=state.n_k.copy(),
                    rng=state.rng.copy())


@pytest.mark.parametrize("mh_steps", [1, 3])
@pytest.mark.parametrize("with_frozen", [False, True])
@pytest.mark.parametrize("exact_below", [0, 4, MH_EXACT_BELOW])
def test_kernel_matches_the_numpy_reference_draw_for_draw(mh_steps, with_frozen, exact_below):
    """exact_below 0: cycles for every token; 4: both moves, documents crossing the bound both ways; default: the
    exact-document move for every token (a 30-token document holds at most 7 topics)."""
    corpus = synthetic_lda(n_docs=25, doc_len=30, n_words=60, n_topics=4, seed=3)[0]
    k = 7
    state = init_state(corpus.words, corpus.doc_ptr, corpus.n_words, k, seed=5)
    frozen = np.random.default_rng(1).integers(0, 4, size=(corpus.n_words, k)).astype(np.int32) if with_frozen else None
    ref = _copy(state)
    for _ in range(3):
        sweep(state, corpus.words, corpus.doc_ptr, 0.2, 0.05, frozen_wk=frozen, sampler="mh", mh_steps=mh_steps,
              mh_exact_below=exact_below)
        reference_cycle_sweep(ref, corpus.words, corpus.doc_ptr, 0.2, 0.05, mh_steps=mh_steps, frozen_wk=frozen,
                              exact_below=exact_below)
        np.testing.assert_array_equal(state.z, ref.z)
        np.testing.assert_array_equal(state.n_dk, ref.n_dk)
        np.testing.assert_array_equal(state.n_wk, ref.n_wk)
        np.testing.assert_array_equal(state.n_k, ref.n_k)
        np.testing.assert_array_equal(state.rng, ref.rng)
    assert not np.array_equal(state.z, init_state(corpus.words, corpus.doc_ptr, corpus.n_words, k, seed=5).z)


# A corpus small enough to enumerate: every assignment of its 6 tokens to 3 topics (729 states).
_WORDS = np.array([0, 1, 0, 2, 1, 1], dtype=np.int32)
_PTR = np.array([0, 3, 6], dtype=np.int64)
_K, _V, _ALPHA, _BETA = 3, 3, 0.4, 0.3
_FROZEN = np.array([[3, 0, 1], [0, 2, 0], [1, 1, 4]], dtype=np.int32)


def _log_posterior(states: np.ndarray, alpha: float, frozen: np.ndarray) -> np.ndarray:
    """log p(z | w) + const for every row of states int[S, N] (collapsed LDA, Eq. 10's joint; frozen counts added)."""
    out = np.empty(len(states))
    for r, z in enumerate(states):
        n_dk, n_wk, n_k = counts_from_z(z.astype(np.int32), _WORDS, _PTR, _V, _K)
        tot_wk, tot_k = n_wk + frozen, n_k + frozen.sum(0)
        out[r] = gammaln(n_dk + alpha).sum() + gammaln(tot_wk + _BETA).sum() - gammaln(tot_k + _V * _BETA).sum()
    return out


def _one_sweep_from_posterior(n_chains: int, mh_steps: int, frozen: np.ndarray | None, exact_below: int, seed: int):
    """(observed counts per state after one sweep from exact posterior draws, the posterior)."""
    states = np.array(list(itertools.product(range(_K), repeat=len(_WORDS))), dtype=np.int64)
    f = np.zeros((_V, _K), np.int32) if frozen is None else frozen
    logp = _log_posterior(states, _ALPHA, f)
    post = np.exp(logp - logp.max())
    post /= post.sum()
    starts = np.random.default_rng(seed).choice(len(states), size=n_chains, p=post)
    index = {tuple(s): i for i, s in enumerate(states)}
    observed = np.zeros(len(states), dtype=np.int64)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # 12,000 tiny sweeps: a parallel region each (the frozen alias tables) cost up to a
    try:  # minute in the suite, where the other worker holds the second core
        for c, start in enumerate(starts):
            observed[_sweep_once(states[start], c, seed, frozen, mh_steps, exact_below, index)] += 1
    finally:
        numba.set_num_threads(threads)
    return observed, post, states


def _sweep_once(start: np.ndarray, c: int, seed: int, frozen, mh_steps: int, exact_below: int, index: dict) -> int:
    """The state index after one sweep of chain ``c`` from ``start``."""
    z = start.astype(np.int32)
    n_dk, n_wk, n_k = counts_from_z(z, _WORDS, _PTR, _V, _K)
    rng = make_rng_states(100_000 * seed + c, 1)  # a seeded stream per chain
    state = LDAState(z=z, n_dk=n_dk, n_wk=n_wk, n_k=n_k, rng=rng)
    sweep(state, _WORDS, _PTR, _ALPHA, _BETA, frozen_wk=frozen, sampler="mh", mh_steps=mh_steps,
          mh_exact_below=exact_below)
    return index[tuple(state.z)]


@pytest.mark.parametrize(("mh_steps", "frozen", "exact_below"),
                         [(1, None, 0), (2, _FROZEN, 0), (1, None, 1), (2, _FROZEN, 1), (1, _FROZEN, MH_EXACT_BELOW)])
def test_a_sweep_leaves_the_exact_posterior_invariant(mh_steps, frozen, exact_below):
    """Start every chain at an exact posterior draw, run one whole sweep: still the posterior (chi-square, 729 cells).

    exact_below 0: cycles (a document's other tokens always hold a topic); 1: the exact-document move where the
    document's other two tokens share a topic, cycles where not; the default: the exact-document move throughout."""
    observed, post, states = _one_sweep_from_posterior(12_000, mh_steps, frozen, exact_below, seed=11)
    expected = observed.sum() * post
    keep = expected >= 5  # pool the rare states into one cell
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    assert chisquare(obs, exp).pvalue > 1e-3
    # the test has power: the posterior under another α (or without the frozen counts) is rejected
    f = np.zeros((_V, _K), np.int32) if frozen is None else frozen
    for wrong_alpha, wrong_frozen in ((2 * _ALPHA, f), (_ALPHA, np.zeros_like(f) if frozen is not None else _FROZEN)):
        logw = _log_posterior(states, wrong_alpha, wrong_frozen)
        wrong = np.exp(logw - logw.max())
        wrong = observed.sum() * wrong / wrong.sum()
        assert chisquare(np.append(observed[keep], observed[~keep].sum()),
                         np.append(wrong[keep], wrong[~keep].sum())).pvalue < 1e-6


def test_mh_recovers_ground_truth_about_as_well_as_dense():
    corpus, phi_true = synthetic_lda(n_docs=150, doc_len=60, n_words=80, n_topics=5, seed=21)
    errors = {s: topic_l1_error(phi_true, GibbsLDA(5, alpha=0.1, beta=0.05, sampler=s, seed=1).fit(corpus, 150).phi())
              for s in ("dense", "mh")}
    random_error = topic_l1_error(phi_true, np.random.default_rng(0).dirichlet(np.ones(80), size=5))
    assert errors["mh"] < 0.25 * random_error
    assert errors["mh"] < 1.3 * errors["dense"] + 0.02, errors


def test_two_threads_are_reproducible_and_keep_the_counts_consistent():
    corpus = synthetic_lda(n_docs=60, doc_len=40, n_words=100, n_topics=4, seed=2)[0]
    runs = []
    for _ in range(2):
        state = init_state(corpus.words, corpus.doc_ptr, corpus.n_words, 6, seed=9)
        for _ in range(3):
            sweep(state, corpus.words, corpus.doc_ptr, 0.3, 0.05, sampler="mh", threads=2)
        n_dk, n_wk, n_k = counts_from_z(state.z, corpus.words, corpus.doc_ptr, corpus.n_words, 6)
        np.testing.assert_array_equal(state.n_dk, n_dk)
        np.testing.assert_array_equal(state.n_wk, n_wk)
        np.testing.assert_array_equal(state.n_k, n_k)
        runs.append(state.z.copy())
    np.testing.assert_array_equal(*runs)


def test_thread_shards_do_not_see_each_others_moves():
    """Two threads equal their shards run one after the other in either order: a shard reads the other's tokens
    only as they were at the start of the sweep (z_snap), so no schedule can change the result."""
    corpus = synthetic_lda(n_docs=40, doc_len=30, n_words=50, n_topics=4, seed=6)[0]
    frozen = np.random.default_rng(2).integers(0, 3, size=(corpus.n_words, 5)).astype(np.int32)
    threaded = init_state(corpus.words, corpus.doc_ptr, corpus.n_words, 5, seed=3)
    for order in ((0, 1), (1, 0)):
        state = _copy(threaded)
        tot_wk, tot_k = state.n_wk + frozen, state.n_k + frozen.sum(0)
        scan = scan_order(corpus.words, corpus.doc_ptr, 0, corpus.n_docs)
        z_w = scan_topics(state.z, scan[1])
        z_snap = z_w.copy()
        bounds = shard_bounds(corpus.doc_ptr, 2)
        local_k = np.repeat(tot_k[None, :], 2, axis=0)
        for t in order:
            visits = shard_visits(scan[0], scan[1], corpus.doc_ptr[bounds[t]], corpus.doc_ptr[bounds[t + 1]])
            cycle_shard(corpus.doc_ptr, bounds[t], bounds[t + 1], *scan, *visits, z_w, z_snap, state.z, state.n_dk,
                        tot_wk, local_k[t], np.empty(5, np.int32), *cycle_other(frozen), 0.3, 0.05,
                        corpus.n_words * 0.05, 2, 4, state.rng, t)
        apply_moves(scan[0], z_snap, z_w, tot_wk)
        tot_k += local_k.sum(axis=0) - 2 * tot_k
        if order == (0, 1):
            expected = (state.z.copy(), tot_wk - frozen)
        else:
            np.testing.assert_array_equal(state.z, expected[0])
            np.testing.assert_array_equal(tot_wk - frozen, expected[1])
    sweep(threaded, corpus.words, corpus.doc_ptr, 0.3, 0.05, frozen_wk=frozen, sampler="mh", threads=2, mh_steps=2,
          mh_exact_below=4)
    np.testing.assert_array_equal(threaded.z, expected[0])
    np.testing.assert_array_equal(threaded.n_wk, expected[1])
    np.testing.assert_array_equal(threaded.n_wk, counts_from_z(threaded.z, corpus.words, corpus.doc_ptr,
                                                               corpus.n_words, 5)[1])
    np.testing.assert_array_equal(threaded.n_k, threaded.n_wk.sum(axis=0))


def test_mh_is_a_named_sampler_and_tiny_corpora_work():
    assert resolve_sampler("mh", 5) == "mh"
    assert (resolve_sampler("auto", AUTO_MH_FROM - 1), resolve_sampler("auto", AUTO_MH_FROM)) == ("dense", "mh")
    assert resolve_sampler("auto", AUTO_MH_FROM, AUTO_DENSE_FROM_LENGTH - 1) == "mh"  # short documents
    assert resolve_sampler("auto", AUTO_MH_FROM, AUTO_DENSE_FROM_LENGTH) == "dense"  # long ones: the buckets
    assert resolve_sampler("auto", 10 * AUTO_MH_FROM, AUTO_DENSE_FROM_LENGTH) == "mh"  # ... up to AUTO_DENSE_BELOW
    with pytest.raises(ModelError, match="unknown sampler"):
        resolve_sampler("lightlda", 5)
    corpus = Corpus(words=np.array([0, 1, 2, 1], np.int32), doc_ptr=np.array([0, 1, 2, 4], np.int64),
                    vocab=("a", "b", "c"))
    model = GibbsLDA(3, sampler="mh", seed=0).fit(corpus, 5)
    assert model.state.n_k.sum() == 4
    # a one-word vocabulary, with and without frozen counts of the same shape as the placeholder's first axis
    words, ptr = np.zeros(5, np.int32), np.array([0, 2, 5], np.int64)
    for frozen in (None, np.array([[2, 0, 1]], np.int32)):
        state = init_state(words, ptr, 1, 3, seed=1)
        ref = _copy(state)
        sweep(state, words, ptr, 0.5, 0.1, frozen_wk=frozen, sampler="mh")
        reference_cycle_sweep(ref, words, ptr, 0.5, 0.1, mh_steps=4, frozen_wk=frozen, exact_below=MH_EXACT_BELOW)
        np.testing.assert_array_equal(state.z, ref.z)
    with pytest.raises(ModelError, match="mh_exact_below must be >= 0"):
        sweep(state, words, ptr, 0.5, 0.1, sampler="mh", mh_exact_below=-1)
