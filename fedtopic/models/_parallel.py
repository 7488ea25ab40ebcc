"""Parallel sweeps inside one process (numba prange or threads; no GIL), one RNG stream a shard.

* dense (partitioned_dense): the corpus cut into T document shards × C word chunks (C a multiple of T), C rounds;
  in round r thread c samples one chunk of shard (r + c) mod T. No two threads hold one word's or one document's
  row at once, so the counts are shared and exact; only the topic totals N_k are a thread's own within a round.
  The chunk lists cost 2 bytes a token (offsets within a document), kept with the state between sweeps.
* sparse (parallel_mh): AD-LDA (Newman et al. 2009): each document shard samples against a private copy of the
  counts taken at the start of the sweep, and the changes are added up after, N ← N + Σ_t (N_t − N); a shard
  does not see the other shards' moves within the sweep.
* mh (parallel_cycle): AD-LDA without the copies: a shard reads the counts as they were and keeps the visited
  word's row to itself; the moves are added up after.

None is the sequential chain; each result depends on T (boundaries and streams) but not on thread timing.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit, prange

from fedtopic.models._alias import build_word_alias
from fedtopic.models._cycle_mh import apply_moves, cycle_shard, gather_visits
from fedtopic.models._gibbs_block import dense_block
from fedtopic.models._mh import mh_shard


@njit(cache=True, nogil=True)
def add_shard_totals(tot_k, local_k):
    """tot_k ← tot_k + Σ_t (local_k[t] − tot_k): the topic totals int64[K] after shards that each kept their own
    moves in local_k int64[T, K], starting from tot_k."""
    for k in range(tot_k.shape[0]):
        base = tot_k[k]
        acc = base
        for t in range(local_k.shape[0]):
            acc += local_k[t, k] - base
        tot_k[k] = acc


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
    add_shard_totals(tot_k, local_k)


@njit(cache=True, parallel=True, nogil=True)
def _copy_into(tot_wk, tot_k, local_wk, local_k):
    """local_wk[t] ← tot_wk and local_k[t] ← tot_k for every copy t, rows in parallel."""
    for v in prange(tot_wk.shape[0]):
        for t in range(local_wk.shape[0]):
            local_wk[t, v] = tot_wk[v]
    for t in range(local_wk.shape[0]):
        local_k[t] = tot_k


@njit(cache=True, parallel=True, nogil=True)
def _mh_shards(
    words, doc_ptr, bounds, z, n_dk, local_wk, local_k, stale_wk, stale_k,
    ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, alpha, beta, vbeta, mh_steps, dense_above, rng,
):
    for t in prange(bounds.shape[0] - 1):
        mh_shard(
            words, doc_ptr, bounds[t], bounds[t + 1], z, n_dk, local_wk[t], local_k[t], stale_wk, stale_k,
            ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, alpha, beta, vbeta, mh_steps, dense_above, rng,
            np.int64(t),  # prange's index is unsigned: int64, so that one signature serves every thread count
        )


def word_chunks(words: np.ndarray, doc_ptr: np.ndarray, n_words: int, n_chunks: int) -> tuple[np.ndarray, np.ndarray]:
    """(tok uint16[N] (int32 where a document is longer than 65,536 tokens), offs int64[C+1, D]): the vocabulary
    cut into C chunks of nearly equal token counts (by word id), and every document's tokens listed chunk by chunk:
    doc_ptr[d] + tok[offs[c, d]:offs[c + 1, d]] are the corpus positions of document d's tokens whose word lies in
    chunk c, in corpus order. Offsets within the document, not positions: 2 bytes a token, kept between sweeps (at
    30M tokens 60 MB instead of 120)."""
    longest = int(np.diff(doc_ptr).max(initial=0))
    tok = np.empty(words.shape[0], dtype=np.uint16 if longest <= 1 << 16 else np.int32)
    offs = np.empty((n_chunks + 1, doc_ptr.shape[0] - 1), dtype=np.int64)
    _fill_chunks(words, doc_ptr, n_words, tok, offs)
    return tok, offs


@njit(cache=True, nogil=True)
def _fill_chunks(words, doc_ptr, n_words, tok, offs):
    n_chunks = offs.shape[0] - 1
    n_tokens = words.shape[0]
    n_docs = doc_ptr.shape[0] - 1
    freq = np.zeros(n_words, dtype=np.int64)
    for i in range(n_tokens):
        freq[words[i]] += 1
    chunk_of = np.empty(n_words, dtype=np.int64)
    before = 0
    for w in range(n_words):
        chunk_of[w] = min(n_chunks - 1, before * n_chunks // max(n_tokens, 1))
        before += freq[w]
    fill = np.empty(n_chunks, dtype=np.int64)
    for d in range(n_docs):
        for c in range(n_chunks):
            fill[c] = 0
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            fill[chunk_of[words[i]]] += 1
        at = doc_ptr[d]
        for c in range(n_chunks):
            offs[c, d] = at
            at += fill[c]
            fill[c] = offs[c, d]
        offs[n_chunks, d] = at
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            c = chunk_of[words[i]]
            tok[fill[c]] = i - doc_ptr[d]
            fill[c] += 1


# Word rows (int32, V·K·4 bytes) of the chunk a thread of a partitioned dense sweep works in. Measured, 2M tokens,
# seconds a sweep (docs/results/samplers.md "Dense sweeps in word chunks"): one thread, K 1,000 × V 5,000 (20 MB of rows) 0.61-0.68
# whole, 0.42-0.50 in 3 chunks; K 200 × V 50,000 (40 MB) 0.43 whole, 0.17-0.18 in 4-8; K 1,000 × V 50,000 (200 MB)
# 1.25-1.27 whole, 0.87-1.02 in 4, 0.64-0.76 in 8, 0.59-0.64 in 24-25; two threads there 0.60 in 2, 0.34 in 24
# (chunks of 8 MB a thread), 0.46 in 48 (4 MB: more rounds, each ending in a wait). Up to a few MB the rows stay
# in cache anyway and chunks only add work (K 50 × V 5,000, one thread: 0.067 whole, 0.071 in 2).
CHUNK_BYTES = 8 * 2**20


def dense_chunks(n_words: int, n_topics: int, threads: int) -> int:
    """How many word chunks a dense sweep in ``threads`` threads takes: a multiple of threads, each chunk at most
    CHUNK_BYTES of word rows (one chunk a thread where they are no larger)."""
    rows = 4 * n_words * n_topics
    return threads * max(1, -(-rows // (threads * CHUNK_BYTES)))


@njit(cache=True, parallel=True, nogil=True)
def _partitioned(words, doc_ptr, tok, offs, bounds, z, n_dk, tot_wk, tot_k, local_k, lists, alpha, beta, vbeta, rng):
    n_parts = bounds.shape[0] - 1
    n_chunks = offs.shape[0] - 1
    for r in range(n_chunks):
        first = r // n_parts * n_parts  # this round's chunks: first .. first + T - 1, one a thread
        for c in range(n_parts):
            local_k[c] = tot_k
        for c in prange(n_parts):
            g = (r + c) % n_parts
            dense_block(words, tok, offs[first + c], offs[first + c + 1], doc_ptr, bounds[g], bounds[g + 1], z, n_dk,
                        tot_wk, local_k[c], lists, alpha, beta, vbeta, rng, np.int64(c))  # int64 as one thread's 0
        add_shard_totals(tot_k, local_k)


def partitioned_dense(words, doc_ptr, z, n_dk, tot_wk, tot_k, n_threads, chunks, lists, alpha, beta, vbeta,
                      rng) -> None:
    """Dense sweep in T threads over a grid of (document shard, word chunk) blocks; tot_wk/tot_k in place.

    chunks: ``word_chunks`` of the corpus for C = m·T chunks (``dense_chunks``); lists: the word lists of the
    buckets (``_buckets.word_lists``, shared: a word is one thread's in a round) or ``_buckets.no_lists``. The
    documents are cut into T shards; C rounds, in round r thread c samples the tokens of word chunk ⌊r/T⌋·T + c
    in document shard (r + c) mod T, so every block once a sweep. No two threads touch one word's row or one
    document's row at once: the word-topic counts are shared and exact (no private copy), and only the topic
    totals N_k are a thread's own during a round, added up after it (tomotopy's "partition" scheme; Yan, Xu & Qi
    2009). A chunk keeps the rows in use small enough to stay in cache, which pays on one thread too, where the
    sweep is sequential Gibbs in another order (exact). The result depends on T and C but not on thread timing.
    """
    tok, offs = chunks
    local_k = np.empty((n_threads, tot_k.shape[0]), dtype=np.int64)
    _partitioned(words, doc_ptr, tok, offs, shard_bounds(doc_ptr, n_threads), z, n_dk, tot_wk, tot_k, local_k, lists,
                 alpha, beta, vbeta, rng)


def shard_bounds(doc_ptr: np.ndarray, n_shards: int) -> np.ndarray:
    """int64[T+1] document boundaries splitting the tokens into T nearly equal contiguous shards."""
    n_docs = len(doc_ptr) - 1
    targets = doc_ptr[-1] * np.arange(1, n_shards, dtype=np.float64) / n_shards
    inner = np.searchsorted(doc_ptr, targets, side="left").clip(0, n_docs)
    return np.concatenate([[0], inner, [n_docs]]).astype(np.int64)


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
    shards = [visits(int(bounds[t]), int(bounds[t + 1])) for t in range(n_shards)]
    z_w = np.empty(order.shape[0], np.int32)  # the topics in scan order, each shard gathering its own ...
    z_snap = np.empty_like(z_w)  # ... and their copy as the sweep began
    local_k = np.repeat(tot_k[None, :], n_shards, axis=0)

    def gather(t: int) -> None:
        gather_visits(z, order, shards[t][0], z_w, z_snap)

    def run(t: int) -> None:
        cycle_shard(doc_ptr, bounds[t], bounds[t + 1], *scan, *shards[t], z_w, z_snap, z, n_dk, tot_wk, local_k[t],
                    np.empty(tot_wk.shape[1], np.int32), *other, alpha, beta, vbeta, mh_steps, exact_below, rng, t)

    with ThreadPoolExecutor(max_workers=n_shards) as pool:
        list(pool.map(gather, range(n_shards)))  # every shard's topics in place before any shard reads them
        list(pool.map(run, range(n_shards)))
    apply_moves(word_ptr, z_snap, z_w, tot_wk)
    add_shard_totals(tot_k, local_k)
