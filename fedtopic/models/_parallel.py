"""Document-shard parallel sweeps (AD-LDA inside one process; Newman et al. 2009).

Each of the T shards (a contiguous run of documents) samples against its own
private copy of the total word-topic counts taken at the start of the sweep,
with its own RNG stream, in parallel (numba prange, no GIL). After the sweep the
shards' changes are added up: N ← N + Σ_t (N_t − N). This is an approximation
of sequential Gibbs: within a sweep a shard does not see the other shards'
moves (the counts it uses are stale by at most one sweep), exactly as AD-LDA
across machines. n_dk and z need no merging: documents belong to one shard.
The result depends on T (shard boundaries and streams) but not on thread timing.
The cycle-MH sweep needs no private copy: it reads the counts as they were and keeps
the visited word's row to itself (parallel_cycle).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit, prange

from fedtopic.models._alias import build_word_alias
from fedtopic.models._cycle_mh import apply_moves, cycle_shard, scan_topics
from fedtopic.models._dense import dense_shard
from fedtopic.models._mh import mh_shard


@njit(cache=True, parallel=True, nogil=True)
def _merge(tot_wk, tot_k, local_wk, local_k):
    """tot ← tot + Σ_t (local_t − tot), rows in parallel."""
    n_shards = local_wk.shape[0]
    n_words, n_topics = tot_wk.shape
    for v in prange(n_words):
        for k in range(n_topics):
            base = tot_wk[v, k]
            acc = base
            for t in range(n_shards):
                acc += local_wk[t, v, k] - base
            tot_wk[v, k] = acc
    for k in range(n_topics):
        base = tot_k[k]
        acc = base
        for t in range(n_shards):
            acc += local_k[t, k] - base
        tot_k[k] = acc


@njit(cache=True, parallel=True, nogil=True)
def _copy_into(tot_wk, tot_k, local_wk, local_k):
    """local_wk[t] ← tot_wk and local_k[t] ← tot_k for every shard t, in parallel."""
    for t in prange(local_wk.shape[0]):
        local_wk[t] = tot_wk
        local_k[t] = tot_k


@njit(cache=True, parallel=True, nogil=True)
def _dense_shards(words, doc_ptr, bounds, z, n_dk, local_wk, local_k, alpha, beta, vbeta, rng):
    for t in prange(bounds.shape[0] - 1):
        dense_shard(
            words, doc_ptr, bounds[t], bounds[t + 1], z, n_dk, local_wk[t], local_k[t], alpha, beta, vbeta, rng, t
        )


@njit(cache=True, parallel=True, nogil=True)
def _mh_shards(
    words, doc_ptr, bounds, z, n_dk, local_wk, local_k, stale_wk, stale_k,
    ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, alpha, beta, vbeta, mh_steps, dense_above, rng,
):
    for t in prange(bounds.shape[0] - 1):
        mh_shard(
            words, doc_ptr, bounds[t], bounds[t + 1], z, n_dk, local_wk[t], local_k[t], stale_wk, stale_k,
            ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, alpha, beta, vbeta, mh_steps, dense_above, rng, t,
        )


def shard_bounds(doc_ptr: np.ndarray, n_shards: int) -> np.ndarray:
    """int64[T+1] document boundaries splitting the tokens into T nearly equal contiguous shards."""
    n_docs = len(doc_ptr) - 1
    targets = doc_ptr[-1] * np.arange(1, n_shards, dtype=np.float64) / n_shards
    inner = np.searchsorted(doc_ptr, targets, side="left").clip(0, n_docs)
    return np.concatenate([[0], inner, [n_docs]]).astype(np.int64)


def parallel_dense(words, doc_ptr, z, n_dk, tot_wk, tot_k, local_wk, local_k, alpha, beta, vbeta, rng) -> None:
    """Dense sweep over T document shards in parallel; tot_wk/tot_k merged in place.

    local_wk int32[T,V,K] / local_k int64[T,K]: the shards' private counts (overwritten;
    kept by the caller between sweeps so that no sweep pays for fresh pages).
    """
    n_shards = local_wk.shape[0]
    _copy_into(tot_wk, tot_k, local_wk, local_k)
    _dense_shards(words, doc_ptr, shard_bounds(doc_ptr, n_shards), z, n_dk, local_wk, local_k, alpha, beta, vbeta, rng)
    _merge(tot_wk, tot_k, local_wk, local_k)


def parallel_mh(
    words, doc_ptr, z, n_dk, tot_wk, tot_k, local_wk, local_k, tables, alpha, beta, vbeta, mh_steps, dense_above, rng
) -> None:
    """MH sweep over T shards; tot_wk/tot_k (also the alias tables' stale counts) merged in place.

    local_wk / local_k: the shards' private counts, as in parallel_dense.
    """
    n_shards = local_wk.shape[0]
    _copy_into(tot_wk, tot_k, local_wk, local_k)
    _mh_shards(
        words, doc_ptr, shard_bounds(doc_ptr, n_shards), z, n_dk, local_wk, local_k, tot_wk, tot_k,
        *tables, alpha, beta, vbeta, mh_steps, dense_above, rng,
    )
    _merge(tot_wk, tot_k, local_wk, local_k)


def _frozen_alias(other_wk: np.ndarray) -> tuple:
    """(f_ptr, f_top, f_prob, f_alt, f_mass): alias tables with weights other_wk[w, k] (_cycle_mh's F)."""
    ptr, top, prob, alt, mass, _, _, _ = build_word_alias(other_wk, np.zeros(other_wk.shape[1], np.int64), 1.0, 1.0)
    return ptr, top, prob, alt, mass


def cycle_other(frozen_wk: np.ndarray | None) -> tuple:
    """(has_other, *alias tables) of other parties' frozen counts for a cycle sweep (one shard or several), or
    placeholders when there are none."""
    if frozen_wk is None:
        return (False, np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0), np.zeros(0, np.int32), np.zeros(1))
    return (True, *_frozen_alias(frozen_wk))


def parallel_cycle(
    doc_ptr, z, n_dk, tot_wk, tot_k, n_shards, scan, other, alpha, beta, vbeta, mh_steps, exact_below, rng, visits,
) -> None:
    """Cycle-MH sweep (_cycle_mh.py) over T document shards in threads (the kernel releases the GIL); tot_wk/tot_k
    updated in place after. scan: the whole corpus's _cycle_mh.scan_order; visits(d0, d1): a shard's
    _cycle_mh.shard_visits in it; other: cycle_other of the frozen counts.

    Every shard reads the totals as they were at the start of the sweep plus its own moves (AD-LDA), word by
    word from a private copy of the visited word's row, and its word proposals pick any token of the word: its
    own at their current topics, another shard's at its topic when the sweep began. The totals are shared and
    read only (no [V, K] copy a shard); the moves are added up after, from the topics in scan order."""
    word_ptr, order, _ = scan
    bounds = shard_bounds(doc_ptr, n_shards)
    z_w = scan_topics(z, order)
    z_snap = z_w.copy()
    local_k = np.repeat(tot_k[None, :], n_shards, axis=0)

    def run(t: int) -> None:
        cycle_shard(doc_ptr, bounds[t], bounds[t + 1], *scan, *visits(int(bounds[t]), int(bounds[t + 1])), z_w,
                    z_snap, z, n_dk, tot_wk, local_k[t], np.empty(tot_wk.shape[1], np.int32), *other, alpha, beta,
                    vbeta, mh_steps, exact_below, rng, t)

    with ThreadPoolExecutor(max_workers=n_shards) as pool:
        list(pool.map(run, range(n_shards)))
    apply_moves(word_ptr, z_snap, z_w, tot_wk, tot_k)
