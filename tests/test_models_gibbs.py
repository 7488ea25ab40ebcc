"""Gibbs sweeps: dense kernel == numpy reference; count invariants; frozen counts; reproducibility."""

import numpy as np
import pytest
from _lda_synth import synthetic_lda

from fedtopic.errors import ModelError
from fedtopic.models import _buckets, _parallel, gibbs
from fedtopic.models._gibbs_block import dense_block
from fedtopic.models._parallel import shard_bounds, word_chunks
from fedtopic.models.gibbs import sweep
from fedtopic.models.reference import reference_bucket_sweep, reference_sweep
from fedtopic.models.state import counts_from_z, init_state

K = 7


@pytest.fixture(scope="module")
def corpus():
    return synthetic_lda(n_docs=40, doc_len=30, n_words=60, n_topics=4, seed=3)[0]


def _state(corpus, seed=11, k=K):
    return init_state(corpus.words, corpus.doc_ptr, corpus.n_words, k, seed)


def _kernel(kernel, monkeypatch):
    """Above K 256, 'buckets' makes every dense sweep take the buckets and 'scan' none (BUCKETS_FROM)."""
    monkeypatch.setattr(_buckets, "BUCKETS_FROM", 0 if kernel == "buckets" else 10**9)


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
def test_dense_kernel_equals_numpy_reference(corpus, with_frozen, k, monkeypatch):
    _kernel("scan", monkeypatch)
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


def test_word_chunks_list_every_token_once_by_chunk(corpus):
    for n_chunks in (1, 2, 3):
        tok, offs = word_chunks(corpus.words, corpus.doc_ptr, corpus.n_words, n_chunks)
        assert tok.dtype == np.uint16  # offsets within a document: 2 bytes a token
        np.testing.assert_array_equal(offs[0], corpus.doc_ptr[:-1])
        np.testing.assert_array_equal(offs[-1], corpus.doc_ptr[1:])
        chunk_of = np.full(len(corpus.words), -1, dtype=np.int64)
        for c in range(n_chunks):
            for d in range(corpus.n_docs):
                block = corpus.doc_ptr[d] + tok[offs[c, d]:offs[c + 1, d]].astype(np.int64)
                assert np.all((corpus.doc_ptr[d] <= block) & (block < corpus.doc_ptr[d + 1]))
                assert np.all(np.diff(block) > 0)  # corpus order inside a block
                chunk_of[block] = c
        assert np.all(chunk_of >= 0)  # every token listed (once: the blocks' sizes add up to N, offs above)
        assert np.all(np.diff(chunk_of[np.argsort(corpus.words, kind="stable")]) >= 0)  # chunks are word ranges
        sizes = np.bincount(chunk_of, minlength=n_chunks)
        assert sizes.max() - sizes.min() <= 2 * np.bincount(corpus.words).max()  # nearly equal token counts


@pytest.mark.parametrize("k,kernel", [(K, "runs"), (300, "scan"), (300, "buckets")])
def test_a_block_of_every_token_is_the_dense_sweep(corpus, k, kernel, monkeypatch):
    """dense_block over one chunk (every token, listed) draws exactly as the dense sweep, every kernel."""
    _kernel(kernel, monkeypatch)
    whole, block = _state(corpus, k=k), _state(corpus, k=k)
    tok, offs = word_chunks(corpus.words, corpus.doc_ptr, corpus.n_words, 1)
    sweep(whole, corpus.words, corpus.doc_ptr, 0.2, 0.05, sampler="dense")
    dense_block(corpus.words, tok, offs[0], offs[1], corpus.doc_ptr, 0, corpus.n_docs, block.z, block.n_dk,
                block.n_wk, block.n_k, gibbs._bucket_lists(block.n_wk), 0.2, 0.05, corpus.n_words * 0.05, block.rng, 0)
    np.testing.assert_array_equal(block.z, whole.z)
    np.testing.assert_array_equal(block.n_wk, whole.n_wk)


@pytest.mark.parametrize("k,kernel", [(K, "runs"), (300, "scan"), (300, "buckets")])
def test_a_document_past_65536_tokens_is_listed_by_int32_offsets(k, kernel, monkeypatch):
    """Chunk lists hold offsets within a document: uint16 up to 65,536 tokens a document, int32 past it; every
    kernel reads a block of every token, by int32 offsets, as the dense sweep draws."""
    _kernel(kernel, monkeypatch)
    rng = np.random.default_rng(4)
    lengths = np.array([3, 70_000, 5, 1])
    words = rng.integers(0, 50, size=int(lengths.sum())).astype(np.int32)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tok, offs = word_chunks(words, ptr, 50, 1)
    assert tok.dtype == np.int32
    np.testing.assert_array_equal(tok[ptr[1]:ptr[2]], np.arange(70_000))
    whole, block = (init_state(words, ptr, 50, k, seed=2) for _ in range(2))
    sweep(whole, words, ptr, 0.2, 0.05, sampler="dense")
    dense_block(words, tok, offs[0], offs[1], ptr, 0, len(lengths), block.z, block.n_dk, block.n_wk, block.n_k,
                gibbs._bucket_lists(block.n_wk), 0.2, 0.05, 50 * 0.05, block.rng, 0)
    np.testing.assert_array_equal(block.z, whole.z)


def _block_grid_sweep(state, corpus, alpha, beta, frozen, threads, n_chunks):
    """The partitioned dense sweep written out: C rounds one block after another, in round r block (document
    shard (r + c) mod T, word chunk ⌊r/T⌋·T + c) with stream c, the topic totals a block's own during the round
    and added up after it."""
    tok, offs = word_chunks(corpus.words, corpus.doc_ptr, corpus.n_words, n_chunks)
    bounds = shard_bounds(corpus.doc_ptr, threads)
    tot_wk = state.n_wk + (0 if frozen is None else frozen)
    tot_k = state.n_k + (0 if frozen is None else frozen.sum(0))
    lists = gibbs._bucket_lists(tot_wk)  # listed once a sweep, shared by the blocks
    for r in range(n_chunks):
        start_k = tot_k.copy()
        for c in reversed(range(threads)):
            own_k = start_k.copy()
            g, chunk = (r + c) % threads, r // threads * threads + c
            dense_block(corpus.words, tok, offs[chunk], offs[chunk + 1], corpus.doc_ptr, bounds[g], bounds[g + 1],
                        state.z, state.n_dk, tot_wk, own_k, lists, alpha, beta, corpus.n_words * beta, state.rng, c)
            tot_k += own_k - start_k
    state.n_wk[:] = tot_wk - (0 if frozen is None else frozen)
    state.n_k[:] = tot_k - (0 if frozen is None else frozen.sum(0))


@pytest.mark.parametrize("k,kernel", [(K, "runs"), (300, "scan"), (300, "buckets")])
@pytest.mark.parametrize("threads,n_chunks", [(1, 3), (2, 2), (2, 4), (3, 3)])
@pytest.mark.parametrize("with_frozen", [False, True])
def test_dense_sweeps_are_the_block_grid(corpus, k, kernel, threads, n_chunks, with_frozen, monkeypatch):
    """A dense sweep in T threads over C word chunks equals its blocks written out one after the other (one
    thread in chunks: sequential Gibbs in chunk order). Fails if a thread sees another's topic totals mid-round,
    or a block is missed or run twice. The chunk count is forced through CHUNK_BYTES, as large rows would set it."""
    _kernel(kernel, monkeypatch)
    rows = 4 * corpus.n_words * k
    monkeypatch.setattr(_parallel, "CHUNK_BYTES", -(-rows // n_chunks))
    assert _parallel.dense_chunks(corpus.n_words, k, threads) == n_chunks
    frozen = _frozen(corpus, k=k) if with_frozen else None
    swept, oracle = _state(corpus, k=k), _state(corpus, k=k)
    for _ in range(2):
        sweep(swept, corpus.words, corpus.doc_ptr, 0.2, 0.05, frozen_wk=frozen, sampler="dense", threads=threads)
        _block_grid_sweep(oracle, corpus, 0.2, 0.05, frozen, threads, n_chunks)
        np.testing.assert_array_equal(swept.z, oracle.z)
        np.testing.assert_array_equal(swept.n_wk, oracle.n_wk)
        np.testing.assert_array_equal(swept.n_k, oracle.n_k)
    _assert_consistent(swept, corpus)


def test_dense_chunks_follow_the_rows_size():
    assert _parallel.dense_chunks(5000, 50, 1) == 1  # 1 MB of rows: as they are
    assert _parallel.dense_chunks(5000, 50, 2) == 2  # one chunk a thread
    assert _parallel.dense_chunks(5000, 1000, 1) == 3  # 20 MB: chunks of at most 8 MB
    assert _parallel.dense_chunks(5000, 1000, 2) == 4  # a multiple of the threads
    assert _parallel.dense_chunks(50000, 1000, 2) == 24


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


@pytest.mark.parametrize("with_frozen", [False, True])
@pytest.mark.parametrize("k,alpha", [(300, 0.3), (700, 0.02), (300, "learned")])
def test_bucket_kernel_equals_numpy_reference(corpus, with_frozen, k, alpha, monkeypatch):
    """The buckets draw token for token as their pure-numpy reference (word lists, document lists, r and s walks
    included), with a learned α_k too; frozen counts are read, never written."""
    _kernel("buckets", monkeypatch)
    if alpha == "learned":
        alpha = np.random.default_rng(2).uniform(0.01, 0.5, size=k)
    fast, slow = _state(corpus, k=k), _state(corpus, k=k)
    frozen = _frozen(corpus, k=k) if with_frozen else None
    for _ in range(3):
        sweep(fast, corpus.words, corpus.doc_ptr, alpha, 0.05, frozen_wk=frozen, sampler="dense")
        reference_bucket_sweep(slow, corpus.words, corpus.doc_ptr, alpha, 0.05, frozen_wk=frozen)
    for name in ("z", "n_dk", "n_wk", "n_k", "rng"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert not np.array_equal(fast.z, _state(corpus, k=k).z)
    _assert_consistent(fast, corpus)


def test_buckets_draw_from_eq_10():
    """One token resampled 40,000 times from one state: the buckets' frequencies match Eq. 10 (chi-square), with
    mass in all three buckets (a word holding some topics, a document holding others, α on every topic). A wrong
    bucket weight (β missing from R, α from Q, a stale q entry) moves a topic's share by far more."""
    from scipy.stats import chisquare

    k, n_words, beta, alpha = 300, 4, 0.5, 0.05
    words = np.array([0, 1, 2, 0, 3, 1], dtype=np.int32)
    doc_ptr = np.array([0, 3, 6], dtype=np.int64)
    z = np.array([5, 9, 9, 5, 200, 7], dtype=np.int32)
    extra = np.zeros((n_words, k), np.int32)  # other documents' counts, as frozen ones
    extra[0, [5, 9, 17, 299]] = [3, 4, 8, 1]  # topic 9 the document's too
    extra[1, [9, 120]] = [2, 5]
    state = init_state(words, doc_ptr, n_words, k, seed=1)
    state.z[:] = z
    state.n_dk[:], state.n_wk[:], state.n_k[:] = counts_from_z(z, words, doc_ptr, n_words, k)
    starts, ends = doc_ptr[:-1], np.array([1, 6], dtype=np.int64)  # document 0's first token only
    n_draws = 40_000
    draws = np.empty(n_draws, np.int64)
    for r in range(n_draws):  # the same state each time; the stream runs on, so the uniforms are new
        z_r, n_dk = state.z.copy(), state.n_dk.copy()
        tot_wk, tot_k = state.n_wk + extra, state.n_k + extra.sum(0)
        dense_block(words, None, starts, ends, doc_ptr, 0, 1, z_r, n_dk, tot_wk, tot_k, _buckets.word_lists(tot_wk)[0],
                    alpha, beta, n_words * beta, state.rng, 0)
        draws[r] = z_r[0]
    n_dk = state.n_dk[0].astype(float)
    tot_w = (state.n_wk[0] + extra[0]).astype(float)
    tot_k = (state.n_k + extra.sum(0)).astype(float)
    n_dk[5], tot_w[5], tot_k[5] = n_dk[5] - 1, tot_w[5] - 1, tot_k[5] - 1
    p = (n_dk + alpha) * (tot_w + beta) / (tot_k + n_words * beta)
    p /= p.sum()
    assert p[[5, 9, 17]].min() > 2 * p[100]  # the word's and the document's topics stand out of the rest
    assert chisquare(np.bincount(draws, minlength=k), p * n_draws).pvalue > 1e-4
