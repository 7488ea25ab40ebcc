"""The sampler state of one party: topic assignments, its own counts, its RNG streams."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from fedtopic.errors import ModelError
from fedtopic.models.rng import MAX_STREAMS, make_rng_states, next_double


@dataclass
class LDAState:
    """Collapsed-Gibbs state of one party (paper §5.1 notation in brackets).

    z:    uint16[N] (K ≤ 65,536) or int32[N]: topic of every token [z_pij], the narrowest type K allows
          (``topic_dtype``): 2 bytes a token of a billion-token corpus instead of 4
    n_dk: int32[D,K] topics per document [N_p,i^k]
    n_wk: int32[V,K] this party's own word-topic counts [N_p,f^k]
    n_k:  int64[K]   this party's own topic totals, n_k = n_wk.sum(0)
    rng:  uint64[MAX_STREAMS, 2] xoroshiro128+ streams; stream s drives document shard s
    """

    z: np.ndarray
    n_dk: np.ndarray
    n_wk: np.ndarray
    n_k: np.ndarray
    rng: np.ndarray
    _count_copies: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False, repr=False, compare=False)
    _scans: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def scan(self, words: np.ndarray, doc_ptr: np.ndarray, d0: int, d1: int, build, tag: str = "scan") -> tuple:
        """``build(words, doc_ptr, d0, d1)`` for these corpus arrays and documents, computed once and kept (under
        ``tag``: a shard's visits are kept apart from the scan order itself).

        The word-major scan order of a shard depends only on the corpus (measured: 8–30 ms a sweep
        of 1M tokens, 15 % of an "mh" sweep); it is rebuilt when other arrays come in.
        """
        hit = self._scans.get((tag, d0, d1))
        if hit is None or hit[0] is not words or hit[1] is not doc_ptr:
            hit = (words, doc_ptr, build(words, doc_ptr, d0, d1))
            self._scans[(tag, d0, d1)] = hit
        return hit[2]

    def count_copies(self, n_shards: int) -> tuple[np.ndarray, np.ndarray]:
        """(int32[T,V,K], int64[T,K]) scratch copies of the counts, reused between sweeps.

        A sweep overwrites them (the shards' private counts, or the large-K sampler's stale
        counts); keeping them avoids fresh pages on every sweep (40 MB at K=1000, V=5000,
        T=2: measured ~8 ms of page faults per sweep).
        """
        shape = (n_shards, *self.n_wk.shape)
        if self._count_copies is None or self._count_copies[0].shape != shape:
            self._count_copies = (np.empty(shape, dtype=np.int32), np.empty((n_shards, self.n_topics), dtype=np.int64))
        return self._count_copies

    def drop_caches(self) -> None:
        """Forget the kept scans and count copies (rebuilt by the next sweep that needs them): a dense sweep's word
        chunks list every token (2 bytes a token), which a finished model need not hold while it is evaluated."""
        self._scans.clear()
        self._count_copies = None

    @property
    def n_topics(self) -> int:
        return self.n_wk.shape[1]

    @property
    def n_words(self) -> int:
        return self.n_wk.shape[0]


WORD_DTYPES = (np.dtype(np.int32), np.dtype(np.uint16))
"""Word ids of a token stream: int32, or uint16 where V ≤ 65,536 (a token store's narrow ids, ``corpus.token_store``)."""


def topic_dtype(n_topics: int) -> np.dtype:
    """The narrowest type of a topic assignment z_i in [0, K): uint16 up to K = 65,536, int32 beyond."""
    return np.dtype(np.uint16) if n_topics <= 1 << 16 else np.dtype(np.int32)


def read_only(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a``: the kernels only read a corpus's words and offsets, and passing them read-only
    whatever their source (arrays in memory, a memory-mapped token store) keeps numba to one compiled signature
    instead of two per kernel (each of the dense sampler's takes about a minute to compile)."""
    view = a.view()
    view.flags.writeable = False
    return view


def check_corpus_arrays(words: np.ndarray, doc_ptr: np.ndarray, n_words: int) -> None:
    """Raise ModelError unless (words, doc_ptr) is a valid non-empty CSR token stream over V=n_words."""
    if words.dtype not in WORD_DTYPES or words.ndim != 1:
        raise ModelError(f"words must be int32[N] or uint16[N], got {words.dtype}{list(words.shape)}")
    if doc_ptr.dtype != np.int64 or doc_ptr.ndim != 1 or len(doc_ptr) < 2:
        raise ModelError("doc_ptr must be int64[D+1] with at least one document")
    if doc_ptr[0] != 0 or doc_ptr[-1] != len(words) or np.any(np.diff(doc_ptr) < 0):
        raise ModelError("doc_ptr must start at 0, be non-decreasing and end at len(words)")
    if len(words) == 0:
        raise ModelError("empty corpus: there are no tokens to sample")
    if n_words < 1 or words.min() < 0 or words.max() >= n_words:
        raise ModelError(f"word ids must lie in [0, {n_words}), got [{words.min()}, {words.max()}]")


def check_state(state: LDAState, words: np.ndarray, doc_ptr: np.ndarray, n_words: int) -> None:
    """ModelError unless ``state`` (e.g. read back from a file) is a consistent state of this corpus.

    The kernels index counts by z and word ids without bounds checks, so a state from a
    corrupt or foreign file must be refused here: dtypes and shapes, z in [0, K), and
    n_dk, n_wk, n_k equal to the counts of z.
    """
    n_docs, n_tokens = len(doc_ptr) - 1, len(words)
    n_k = state.n_k
    if not isinstance(n_k, np.ndarray) or n_k.dtype != np.int64 or n_k.ndim != 1:
        got = f"{n_k.dtype}{list(n_k.shape)}" if isinstance(n_k, np.ndarray) else type(n_k).__name__
        raise ModelError(f"sampler state: n_k must be int64[K], got {got}")
    n_topics = n_k.shape[0]
    z = state.z
    if not isinstance(z, np.ndarray) or z.dtype not in (np.int32, np.uint16) or z.shape != (n_tokens,):
        got = f"{z.dtype}{list(z.shape)}" if isinstance(z, np.ndarray) else type(z).__name__
        raise ModelError(f"sampler state: z must be uint16[{n_tokens}] or int32[{n_tokens}], got {got}")
    expected = {"n_dk": (np.int32, (n_docs, n_topics)),
                "n_wk": (np.int32, (n_words, n_topics)), "rng": (np.uint64, (MAX_STREAMS, 2))}
    for name, (dtype, shape) in expected.items():
        arr = getattr(state, name)
        if not isinstance(arr, np.ndarray) or arr.dtype != dtype or arr.shape != shape:
            got = f"{arr.dtype}{list(arr.shape)}" if isinstance(arr, np.ndarray) else type(arr).__name__
            raise ModelError(f"sampler state: {name} must be {np.dtype(dtype)}{list(shape)}, got {got}")
    if n_topics < 2 or (n_tokens and (z.min() < 0 or z.max() >= n_topics)):
        raise ModelError(f"sampler state: topic assignments must lie in [0, {n_topics})")
    n_dk, n_wk, n_k = counts_from_z(state.z, words, doc_ptr, n_words, n_topics)
    if not (np.array_equal(n_dk, state.n_dk) and np.array_equal(n_wk, state.n_wk) and np.array_equal(n_k, state.n_k)):
        raise ModelError("sampler state: the counts do not match the topic assignments")


@njit(cache=True)
def _uniform_topics(z: np.ndarray, n_topics: int, rng: np.ndarray) -> None:
    """Fill z with topics drawn uniformly from [0, K) (stream 0)."""
    for i in range(len(z)):
        k = int(next_double(rng, 0) * n_topics)
        z[i] = min(k, n_topics - 1)


@njit(cache=True)
def _count(z: np.ndarray, words: np.ndarray, doc_ptr: np.ndarray, n_dk: np.ndarray, n_wk: np.ndarray) -> None:
    """Add every token's (document, topic) and (word, topic) to the zeroed n_dk / n_wk, in place: no per-token
    temporaries (a bincount of int64 keys needs 16 bytes a token, 16 GB for a billion)."""
    for d in range(len(doc_ptr) - 1):
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            k = z[i]
            n_dk[d, k] += 1
            n_wk[words[i], k] += 1


def counts_from_z(
    z: np.ndarray, words: np.ndarray, doc_ptr: np.ndarray, n_words: int, n_topics: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n_dk int32[D,K], n_wk int32[V,K], n_k int64[K]) recounted from the assignments z."""
    n_dk = np.zeros((len(doc_ptr) - 1, n_topics), dtype=np.int32)
    n_wk = np.zeros((n_words, n_topics), dtype=np.int32)
    _count(z, read_only(words), read_only(doc_ptr), n_dk, n_wk)
    return n_dk, n_wk, n_wk.sum(axis=0, dtype=np.int64)


def init_state(words: np.ndarray, doc_ptr: np.ndarray, n_words: int, n_topics: int, seed: int) -> LDAState:
    """A state with every z drawn uniformly from K topics (stream 0 of the seeded RNG)."""
    if n_topics < 2:
        raise ModelError(f"need at least 2 topics, got K={n_topics}")
    check_corpus_arrays(words, doc_ptr, n_words)
    rng = make_rng_states(seed, MAX_STREAMS)
    z = np.empty(len(words), dtype=topic_dtype(n_topics))
    _uniform_topics(z, n_topics, rng)
    n_dk, n_wk, n_k = counts_from_z(z, words, doc_ptr, n_words, n_topics)
    return LDAState(z=z, n_dk=n_dk, n_wk=n_wk, n_k=n_k, rng=rng)


WARM_START_STREAM = 0x77524D
"""The numpy stream a warm start draws its assignments from (beside the sampler's own streams)."""


def state_from_phi(words: np.ndarray, doc_ptr: np.ndarray, phi: np.ndarray, seed: int,
                   chunk: int = 1 << 16) -> LDAState:
    """A state whose every z_i is drawn from p(k | w_i) ∝ φ_{k,w_i} (``phi`` float64[K, V], θ uniform): a saved
    model's topics as the start of more sweeps (``train --continue-from``); the sampler's streams as
    ``init_state``'s."""
    n_topics, n_words = phi.shape
    if n_topics < 2:
        raise ModelError(f"need at least 2 topics, got K={n_topics}")
    check_corpus_arrays(words, doc_ptr, n_words)
    columns = np.asarray(phi, dtype=np.float64).T  # [V, K]
    totals = columns.sum(axis=1, keepdims=True)
    cumulative = np.cumsum(np.where(totals > 0, columns / np.where(totals > 0, totals, 1.0), 1.0 / n_topics), axis=1)
    draw = np.random.default_rng([seed, WARM_START_STREAM])
    z = np.empty(len(words), dtype=topic_dtype(n_topics))
    for start in range(0, len(words), chunk):
        w = words[start:start + chunk]
        u = draw.random(len(w))[:, None] * cumulative[w, -1:]
        z[start:start + chunk] = np.minimum((cumulative[w] <= u).sum(axis=1), n_topics - 1)
    n_dk, n_wk, n_k = counts_from_z(z, words, doc_ptr, n_words, n_topics)
    return LDAState(z=z, n_dk=n_dk, n_wk=n_wk, n_k=n_k, rng=make_rng_states(seed, MAX_STREAMS))
