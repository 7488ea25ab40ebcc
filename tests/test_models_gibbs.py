"""Gibbs sweeps: dense kernel == numpy reference; count invariants; frozen counts; reproducibility."""

import numpy as np
import pytest
from _lda_synth import synthetic_lda

from fedtopic.errors import ModelError
from fedtopic.models import gibbs
from fedtopic.models.gibbs import sweep
from fedtopic.models.reference import reference_sweep
from fedtopic.models.state import counts_from_z, init_state

K = 7


@pytest.fixture(scope="module")
def corpus():
    return synthetic_lda(n_docs=40, doc_len=30, n_words=60, n_topics=4, seed=3)[0]


def _state(corpus, seed=11, k=K):
    return init_state(corpus.words, corpus.doc_ptr, corpus.n_words, k, seed)


def _frozen(corpus, k=K, seed=5):
    return np.random.default_rng(seed).integers(0, 30, size=(corpus.n_words, k)).astype(np.int32)


def _use(sampler, monkeypatch):
    """'mh' = the sparse sampler with its dense fallback switched off (every token through MH);
    'mixed' = the sparse sweep without the switch to a whole dense sweep (MH and in-sweep dense draws)."""
    if sampler == "mh":
        monkeypatch.setattr(gibbs, "DENSE_FRACTION", 1)
        return "sparse"
    if sampler == "mixed":  # the sparse sweep kept even where most tokens take its in-sweep dense draw
        monkeypatch.setattr(gibbs, "_mostly_dense_fallback", lambda *args: False)
        return "sparse"
    return sampler


def _assert_consistent(state, corpus):
    n_dk, n_wk, n_k = counts_from_z(state.z, corpus.words, corpus.doc_ptr, corpus.n_words, state.n_topics)
    assert np.array_equal(state.n_dk, n_dk) and np.array_equal(state.n_wk, n_wk) and np.array_equal(state.n_k, n_k)
    assert state.n_wk.min() >= 0 and state.n_dk.min() >= 0
    assert state.n_k.sum() == corpus.n_tokens
    assert np.array_equal(state.n_dk.sum(axis=1), corpus.doc_lengths())


@pytest.mark.parametrize("with_frozen", [False, True])
@pytest.mark.parametrize("k", [K, 21, 64, 200, 300])  # one block; partial last block; whole blocks; both kernels
def test_dense_kernel_equals_numpy_reference(corpus, with_frozen, k):
    fast, slow = _state(corpus, k=k), _state(corpus, k=k)
    frozen = _frozen(corpus, k=k) if with_frozen else None
    for _ in range(3):
        sweep(fast, corpus.words, corpus.doc_ptr, 0.3, 0.05, frozen_wk=frozen, sampler="dense")
        reference_sweep(slow, corpus.words, corpus.doc_ptr, 0.3, 0.05, frozen_wk=frozen)
    assert np.array_equal(fast.z, slow.z)
    for name in ("n_dk", "n_wk", "n_k", "rng"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert not np.array_equal(fast.z, _state(corpus, k=k).z)  # the sweeps did move tokens


@pytest.mark.parametrize(
    "sampler,threads", [("dense", 1), ("dense", 2), ("sparse", 1), ("mh", 1), ("mh", 2), ("mixed", 1), ("mixed", 2)]
)
def test_counts_stay_consistent_and_frozen_counts_are_only_read(corpus, sampler, threads, monkeypatch):
    sampler = _use(sampler, monkeypatch)
    state = _state(corpus)
    frozen = _frozen(corpus)
    frozen_copy = frozen.copy()
    for i in range(4):
        sweep(state, corpus.words, corpus.doc_ptr, 0.2, 0.05, frozen_wk=frozen if i % 2 else None,
              sampler=sampler, threads=threads)
        _assert_consistent(state, corpus)  # own counts only: they recount exactly from z
    assert np.array_equal(frozen, frozen_copy)


@pytest.mark.parametrize("sampler", ["dense", "mh"])
def test_frozen_counts_steer_the_sampler(corpus, sampler, monkeypatch):
    """Other parties' counts enter Eq. 10: frozen counts putting word w in topic w % K pull its tokens there."""
    frozen = np.zeros((corpus.n_words, K), dtype=np.int32)
    frozen[np.arange(corpus.n_words), np.arange(corpus.n_words) % K] = 1000
    state, sampler = _state(corpus), _use(sampler, monkeypatch)
    for _ in range(5):
        sweep(state, corpus.words, corpus.doc_ptr, 0.1, 0.01, frozen_wk=frozen, sampler=sampler)
    assert np.mean(state.z == corpus.words % K) > 0.95


@pytest.mark.parametrize(
    "sampler,threads", [("dense", 1), ("dense", 2), ("sparse", 2), ("mh", 1), ("mh", 2), ("mixed", 1)]
)
def test_same_seed_same_result(corpus, sampler, threads, monkeypatch):
    sampler = _use(sampler, monkeypatch)
    runs = []
    for _ in range(2):
        state = _state(corpus, seed=99)
        for _ in range(3):
            sweep(state, corpus.words, corpus.doc_ptr, 0.2, 0.05, sampler=sampler, threads=threads)
        runs.append(state.z.copy())
    assert np.array_equal(runs[0], runs[1])
    other = _state(corpus, seed=100)
    sweep(other, corpus.words, corpus.doc_ptr, 0.2, 0.05, sampler=sampler, threads=threads)
    assert not np.array_equal(other.z, runs[0])


def test_bad_sweep_arguments_are_model_errors(corpus):
    state = _state(corpus)
    args = (state, corpus.words, corpus.doc_ptr)
    with pytest.raises(ModelError, match="positive"):
        sweep(*args, 0.0, 0.1)
    with pytest.raises(ModelError, match="unknown sampler"):
        sweep(*args, 0.1, 0.1, sampler="gibbs")
    with pytest.raises(ModelError, match="frozen_wk"):
        sweep(*args, 0.1, 0.1, frozen_wk=np.zeros((3, K), dtype=np.int32))
    with pytest.raises(ModelError, match="non-negative"):
        sweep(*args, 0.1, 0.1, frozen_wk=-np.ones((corpus.n_words, K), dtype=np.int32))
    with pytest.raises(ModelError, match="threads"):
        sweep(*args, 0.1, 0.1, threads=0)
    with pytest.raises(ModelError, match="at least 2 topics"):
        init_state(corpus.words, corpus.doc_ptr, corpus.n_words, 1, 0)
    with pytest.raises(ModelError, match="empty corpus"):
        init_state(np.zeros(0, np.int32), np.zeros(2, np.int64), 5, 3, 0)


def test_sparse_sweep_runs_dense_when_most_tokens_would_take_its_dense_draw():
    doc_ptr = np.array([0, 30, 40], dtype=np.int64)
    n_dk = np.zeros((2, 16), dtype=np.int32)
    n_dk[0, :10] = 3  # 30 tokens over 10 topics
    n_dk[1, :2] = 5  # 10 tokens over 2 topics
    assert gibbs._mostly_dense_fallback(n_dk, doc_ptr, dense_above=2)  # 30 of 40 tokens in a wide document
    assert not gibbs._mostly_dense_fallback(n_dk, doc_ptr, dense_above=9)
    n_dk[0, :10], n_dk[0, 0] = 0, 30
    assert not gibbs._mostly_dense_fallback(n_dk, doc_ptr, dense_above=0)
