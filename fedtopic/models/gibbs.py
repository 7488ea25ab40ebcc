"""One collapsed Gibbs sweep over a party's tokens (paper §5.1, Eq. 10) — the driver-facing API.

Federated use (AD-LDA style, DESIGN.md): the party's own counts (state.n_wk,
state.n_k) are live; everyone else's counts come in as ``frozen_wk``/``frozen_k``
and stay fixed during the sweep. Token i is sampled from

    p(z_i = k) ∝ (n_dk¬i + α) · (n_wk¬i + F_wk + β) / (n_k¬i + F_k + Vβ)    (Eq. 10, N_Σ = n + F)

and only the party's own counts change. Samplers:

* ``"dense"``  — exact, O(K) per token (_dense.py);
* ``"sparse"`` — alias-table Metropolis–Hastings with an exact document part, O(k_d) per
  token with k_d the topics present in the document, tokens visited word by word (_mh.py), for large K;
* ``"mh"``     — exact Metropolis–Hastings (_cycle_mh.py): a token whose document's other tokens
  hold at most ``mh_exact_below`` topics takes one MH step whose proposal has Eq. 10's document
  part exactly (O(k_d), as AliasLDA) and a word part read from the current state; any other token
  cycles a word and a document proposal (LightLDA's, drawn as WarpLDA does) ``mh_steps`` times,
  O(1). So a token costs O(min(k_d, mh_exact_below)) whatever K; it pays off where O(K) hurts:
  large K;
* ``"auto"``   — dense below ``AUTO_MH_FROM`` topics, and below ``AUTO_DENSE_BELOW`` where documents are long (a
  mean of at least ``AUTO_DENSE_FROM_LENGTH`` tokens: dense's buckets, _buckets.py); mh otherwise.

``threads > 1`` samples in parallel (_parallel.py). dense cuts the corpus into T
document shards × C word chunks (C a multiple of T, more where the [V, K] rows outgrow
the cache: then one thread sweeps chunk by chunk too) and runs C rounds, thread c taking
one chunk of shard (r + c) mod T in round r: word and document rows are shared and
exact, only the topic totals N_k are a thread's own within a round. sparse and mh split
the documents into T shards, each seeing the counts at the start of the sweep plus its
own moves (AD-LDA inside the process): sparse keeps a private copy of the counts a
shard; mh reads the shared counts, copies only the visited word's row, and adds the
moves up after. Neither is the exact sequential chain; results are reproducible for a
given seed and thread count; threads=1 is exact
(dense: sequential Gibbs; mh: every move leaves the posterior invariant).
"""

from __future__ import annotations

import numba
import numpy as np

from fedtopic.errors import ModelError
from fedtopic.models._alias import build_word_alias
from fedtopic.models._buckets import no_lists, takes_buckets, word_lists
from fedtopic.models._cycle_mh import cycle_shard, scan_order, scan_topics, shard_visits
from fedtopic.models._dense import RUNS_UP_TO
from fedtopic.models._gibbs_block import dense_shard
from fedtopic.models._mh import mh_shard
from fedtopic.models._parallel import (
    cycle_other,
    dense_chunks,
    parallel_cycle,
    parallel_mh,
    partitioned_dense,
    word_chunks,
)
from fedtopic.models.prior import Alpha, check_alpha, is_symmetric
from fedtopic.models.state import WORD_DTYPES, LDAState, read_only

SAMPLERS = ("auto", "dense", "sparse", "mh")
# K from which "auto" takes the "mh" sampler, "dense" below. Measured (docs/RESULTS.md, benchmarks/bench_mh.py, wall
# time to tomotopy's held-out perplexity, one core): at K = 1000 mh 22.5 s, sparse 30.1 s; K = 5000 7.2 s against
# 11.9 s; K = 10,000 7.3 s against 15.8 s; at K = 200 dense's sweep costs 0.06 s against mh's 0.09-0.11 s.
AUTO_MH_FROM = 1000
# From AUTO_MH_FROM topics, "auto" keeps dense (by the buckets) where documents have at least this many tokens on
# average. Time to tomotopy's 200-sweep perplexity at K = 1,000, one core (benchmarks/bench_mh.py --shape S, RESULTS
# "The buckets"): 20-1,000 tokens (mean 510) dense 6.23x against mh 2.97x; 100-200 tokens dense 5.08x / mh 3.56x
# (4.77x / 1.90x at 4M tokens); 500-1,000 tokens 6.00x / 5.80x; 20-60 tokens dense 2.66x / mh 3.78-4.87x; 20-40
# tokens 3.50x / 4.33x.
AUTO_DENSE_FROM_LENGTH = 100
# ... below this many topics: at K = 10,000 (1M tokens, 100-200 a document) a dense sweep by the buckets took 1.1 s
# against mh's 0.34 s, so mh stays there; between 1,000 and 10,000 not measured.
AUTO_DENSE_BELOW = 2000
DEFAULT_MH_STEPS = 1  # MH proposals per token (sparse sampler); the exact document part keeps acceptance high
# (word, document) cycles per token of the "mh" sampler. A cycle costs 25–45 ns against ~110 ns of memory traffic
# per token, so more cycles buy mixing cheaply (benchmarks/bench_mh.py, K = 1000, docs/results/samplers.md "`sampler="mh"`"):
# to perplexity 1,756, 1 cycle took ~53 s and 4 cycles ~25 s; to tomotopy's after 200 sweeps, 3 / 4 / 6 cycles
# took 77.9 / 72.2 / 88.2 s.
DEFAULT_MH_CYCLES = 4
# "mh": a token whose document's other tokens hold at most this many topics takes the exact-document move, O(k_d);
# beyond, O(1) cycles. Measured (benchmarks/bench_mh.py's corpus, K = 1000, 200-token documents, time to tomotopy's
# perplexity after 200 sweeps, docs/RESULTS.md): exact move everywhere 22.5 s, bound 256 22.9 s, 128 29.2 s,
# 64 30.4 s, cycles only 31.3 s: the exact move mixes like a Gibbs sweep for ~1.5x a cycle sweep's cost.
# The bound keeps long documents with hundreds of topics from O(k_d) tokens.
MH_EXACT_BELOW = 256
DENSE_FRACTION = 8  # sparse sampler: a token whose document has > K/8 topics takes the exact dense draw


_NO_VISITS = np.zeros(0, np.int64)  # "mh" with one shard: every scan position, in order ...
_NO_ROW = np.zeros(0, np.int32)  # ... and the totals updated in place


def _visits_of(scan: tuple):
    """The build for state.scan of a thread shard's visits (_cycle_mh.shard_visits) in the whole corpus's scan."""
    word_ptr, order, _ = scan
    return lambda words, doc_ptr, d0, d1: shard_visits(word_ptr, order, doc_ptr[d0], doc_ptr[d1])


def _chunks_of(n_words: int, n_chunks: int):
    """The build for state.scan of the corpus's word chunks for a partitioned dense sweep (_parallel.word_chunks)."""
    return lambda words, doc_ptr, d0, d1: word_chunks(words, doc_ptr, n_words, n_chunks)


def resolve_sampler(sampler: str, n_topics: int, mean_doc_length: float | None = None) -> str:
    """'dense', 'sparse' or 'mh' for the requested name (auto: by K and, from AUTO_MH_FROM, the documents' mean
    length, where known); ModelError for an unknown one."""
    if sampler not in SAMPLERS:
        raise ModelError(f"unknown sampler {sampler!r}; choose one of {', '.join(SAMPLERS)}")
    if sampler == "auto":
        long_docs = mean_doc_length is not None and mean_doc_length >= AUTO_DENSE_FROM_LENGTH
        return "mh" if n_topics >= AUTO_MH_FROM and not (long_docs and n_topics < AUTO_DENSE_BELOW) else "dense"
    return sampler


def _mostly_dense_fallback(n_dk: np.ndarray, doc_ptr: np.ndarray, dense_above: int) -> bool:
    """True if most tokens sit in documents with more than dense_above topics (the sparse sweep's dense fallback).

    The word-major sparse sweep handles such tokens slower than the document-major dense sweep
    (random document access), so the whole sweep is then run dense: both are exact Gibbs sweeps
    of Eq. 10 and the choice depends only on the state before the sweep.
    """
    topics_per_doc = np.count_nonzero(n_dk, axis=1)
    return float(np.dot(topics_per_doc > dense_above + 1, np.diff(doc_ptr))) > 0.5 * doc_ptr[-1]


def _bucket_lists(tot_wk: np.ndarray) -> tuple:
    """The dense sweep's word lists for the buckets (K > RUNS_UP_TO, the words holding few topics), else none."""
    n_topics = tot_wk.shape[1]
    if n_topics > RUNS_UP_TO:
        lists, held = word_lists(tot_wk)
        if takes_buckets(held, n_topics):
            return lists
    return no_lists(n_topics)


def _check_frozen(state: LDAState, frozen_wk, frozen_k) -> tuple[np.ndarray | None, np.ndarray | None]:
    if frozen_wk is None:
        if frozen_k is not None:
            raise ModelError("frozen_k was given without frozen_wk")
        return None, None
    frozen_wk = np.asarray(frozen_wk)
    if frozen_wk.shape != state.n_wk.shape or not np.issubdtype(frozen_wk.dtype, np.integer):
        raise ModelError(f"frozen_wk must be an integer array of shape {state.n_wk.shape}, got {frozen_wk.dtype}{list(frozen_wk.shape)}")
    frozen_wk = np.ascontiguousarray(frozen_wk, dtype=np.int32)
    frozen_k = frozen_wk.sum(axis=0, dtype=np.int64) if frozen_k is None else np.asarray(frozen_k)
    if frozen_k.shape != state.n_k.shape or not np.issubdtype(frozen_k.dtype, np.integer):
        raise ModelError(f"frozen_k must be an integer array of shape {state.n_k.shape}")
    if frozen_wk.min() < 0 or frozen_k.min() < 0:
        raise ModelError("frozen counts must be non-negative")
    return frozen_wk, frozen_k.astype(np.int64)


def sweep(
    state: LDAState,
    words: np.ndarray,
    doc_ptr: np.ndarray,
    alpha: Alpha,
    beta: float,
    *,
    frozen_wk: np.ndarray | None = None,
    frozen_k: np.ndarray | None = None,
    sampler: str = "auto",
    threads: int = 1,
    mh_steps: int | None = None,
    mh_exact_below: int | None = None,
) -> None:
    """Resample every token of (words int32[N] or uint16[N], doc_ptr int64[D+1]) once, updating `state` in place.

    alpha: a float, or float64[K] (a learned asymmetric prior: the dense sampler only).
    frozen_wk int32[V,K] / frozen_k int64[K]: other parties' counts, read but never written
    (frozen_k defaults to frozen_wk.sum(0)). threads: number of document shards sampled in parallel.
    mh_steps: MH proposals per token of "sparse" (default 1) or cycles per token of "mh" (default 4).
    mh_exact_below: "mh" takes the exact-document move for a token whose document's other tokens hold at most
    this many topics, the O(1) cycles otherwise (default ``MH_EXACT_BELOW``; 0: cycles almost everywhere).
    """
    alpha = check_alpha(alpha, state.n_topics)
    if not beta > 0:
        raise ModelError(f"beta must be positive, got beta={beta}")
    if words.dtype not in WORD_DTYPES or doc_ptr.dtype != np.int64:
        raise ModelError(f"words must be int32 or uint16 and doc_ptr int64, got {words.dtype} and {doc_ptr.dtype}")
    if len(words) != len(state.z) or len(doc_ptr) != state.n_dk.shape[0] + 1:
        raise ModelError("words/doc_ptr do not match the state (different corpus?)")
    words, doc_ptr = read_only(words), read_only(doc_ptr)
    if not 1 <= threads <= state.rng.shape[0]:
        raise ModelError(f"threads must be in 1..{state.rng.shape[0]}, got {threads}")
    kind = resolve_sampler(sampler, state.n_topics, len(words) / max(len(doc_ptr) - 1, 1))
    if mh_steps is None:
        mh_steps = DEFAULT_MH_CYCLES if kind == "mh" else DEFAULT_MH_STEPS
    if mh_steps < 1:
        raise ModelError(f"mh_steps must be >= 1, got {mh_steps}")
    exact_below = MH_EXACT_BELOW if mh_exact_below is None else int(mh_exact_below)
    if exact_below < 0:
        raise ModelError(f"mh_exact_below must be >= 0, got {mh_exact_below}")
    dense_above = state.n_topics // DENSE_FRACTION
    if kind != "dense" and not is_symmetric(alpha):
        raise ModelError(f"a learned (asymmetric) alpha needs the dense sampler; the {kind!r} sampler's proposals "
                         f"assume a symmetric one: give --opt sampler=dense")
    if kind == "sparse" and _mostly_dense_fallback(state.n_dk, doc_ptr, dense_above):
        kind = "dense"
    frozen_wk, frozen_k = _check_frozen(state, frozen_wk, frozen_k)
    if frozen_wk is None:
        tot_wk, tot_k = state.n_wk, state.n_k
    else:
        tot_wk, tot_k = state.n_wk + frozen_wk, state.n_k + frozen_k
    beta = float(beta)
    vbeta = state.n_words * beta
    n_docs = state.n_dk.shape[0]
    threads = min(threads, n_docs)
    if threads > 1:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    if kind == "mh":
        scan = state.scan(words, doc_ptr, 0, n_docs, scan_order)
        if threads == 1:
            word_ptr, order, _ = scan
            z_w = scan_topics(state.z, order)
            cycle_shard(doc_ptr, 0, n_docs, *scan, _NO_VISITS, word_ptr[:-1], word_ptr[1:], z_w, z_w, state.z,
                        state.n_dk, tot_wk, tot_k, _NO_ROW, *cycle_other(frozen_wk), alpha, beta, vbeta, mh_steps,
                        exact_below, state.rng, 0)
        else:
            parallel_cycle(doc_ptr, state.z, state.n_dk, tot_wk, tot_k, threads, scan, cycle_other(frozen_wk),
                           alpha, beta, vbeta, mh_steps, exact_below, state.rng,
                           lambda d0, d1: state.scan(words, doc_ptr, d0, d1, _visits_of(scan), tag="visits"))
    elif kind == "dense":
        n_chunks = dense_chunks(state.n_words, state.n_topics, threads)
        lists = _bucket_lists(tot_wk)
        if n_chunks == 1:
            dense_shard(words, doc_ptr, 0, n_docs, state.z, state.n_dk, tot_wk, tot_k, lists, alpha, beta, vbeta,
                        state.rng, 0)
        else:
            chunks = state.scan(words, doc_ptr, 0, n_docs, _chunks_of(state.n_words, n_chunks), tag=f"chunks{n_chunks}")
            partitioned_dense(words, doc_ptr, state.z, state.n_dk, tot_wk, tot_k, threads, chunks, lists, alpha, beta,
                              vbeta, state.rng)
    else:
        tables = build_word_alias(tot_wk, tot_k, beta, vbeta)
        if threads == 1:
            stale_wk, stale_k = state.count_copies(1)
            np.copyto(stale_wk[0], tot_wk)
            np.copyto(stale_k[0], tot_k)
            mh_shard(
                words, doc_ptr, 0, n_docs, state.z, state.n_dk, tot_wk, tot_k, stale_wk[0], stale_k[0],
                *tables, alpha, beta, vbeta, mh_steps, dense_above, state.rng, 0,
            )
        else:
            parallel_mh(
                words, doc_ptr, state.z, state.n_dk, tot_wk, tot_k, *state.count_copies(threads), tables, alpha, beta,
                vbeta, mh_steps, dense_above, state.rng,
            )
    if frozen_wk is not None:
        np.subtract(tot_wk, frozen_wk, out=state.n_wk)
        np.subtract(tot_k, frozen_k, out=state.n_k)
