"""Exact collapsed Gibbs for large K in O(k_w + k_d) a token: Eq. 10 in SparseLDA's three buckets.

Yao, Mimno & McCallum (2009) split Eq. 10 (with α_k, the symmetric prior being α_k = α) as

    p_k = (n_dk + α_k)(N_wk + β) / (N_k + Vβ)
        = N_wk (n_dk + α_k) / (N_k + Vβ)     q bucket: the word's topics, N_wk > 0
        + β n_dk / (N_k + Vβ)                 r bucket: the document's topics, n_dk > 0
        + β α_k / (N_k + Vβ)                  s bucket: every topic

and draw u·(Q + R + S): the q bucket is summed over the topics the word holds (k_w of them, ~25-40 a token at
K = 1,000 on the family of corpora once the chain has left its uniform start), R and S are kept as running sums
and walked only when the draw falls in them (a few per cent of tokens). The same distribution as the dense
kernel (``_dense``), so the same chain in law; other draws for the same uniforms (the buckets order the topics
differently), as any regrouping would.

Bookkeeping:
* the word's topics are a list per word (``word_lists``: capacity min(K, the word's count), so at most a topic
  a token, uint16 where K ≤ 65,536), built from the counts before a sweep and kept exact within it: a topic
  whose N_wk falls to 0 is swapped out, one that rises from 0 appended. A list is a word's, so the threads of a
  partitioned sweep (``_parallel.partitioned_dense``: no two threads hold a word at once) share them safely.
* the document's topics are listed at its start from its tokens' topics (all of them, whichever word chunk is
  being sampled), appended on a join, never removed within the document (a topic at n_dk = 0 adds 0).
* q_k = (n_dk + α_k)/(N_k + Vβ) is α_k/(N_k + Vβ) outside the current document; set for its topics at its start,
  reset at its end, refreshed for the two topics a token moves (``_dense``'s inverse tables, the same divisions).
* S = Σ α_k/(N_k + Vβ) and R = Σ n_dk/(N_k + Vβ) are updated as the token moves and summed afresh every K
  updates (S) and at every document (R), so rounding cannot drift.

The walk of the q bucket counts the running sums ≤ t (no branch on t); R and S are walked with an early exit,
and rounding that carries t past a bucket's end takes its last topic of positive mass.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedtopic.models._alpha_at import alpha_at
from fedtopic.models._dense import (
    aligned_zeros,
    inverse_tables,
    join_topic,
    leave_topic,
)
from fedtopic.models.rng import OWN_ROW, next_double, put_stream, take_stream

# A dense sweep at K > RUNS_UP_TO takes the buckets when its words hold, weighted by tokens, at most K / this many
# topics. Measured (one thread, K 1,000, seconds a sweep against the dense kernel's; docs/results/samplers.md "The buckets"): 4M
# tokens V 8,000, 415 topics a word at the uniform start 1.50 against 0.97, 188 0.93 / 0.88, 123 0.78 / 0.87,
# 46 0.56 / 0.86; mixed lengths at 1M tokens, 108 a word 0.18 against 0.23, 26 0.10 / 0.22.
BUCKETS_FROM = 5


def word_lists(tot_wk: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], float]:
    """((ptr int64[V+1], top uint16|int32[ptr[-1]], cnt int64[V]), held): the topics with tot_wk[w, k] > 0 of each
    word, top[ptr[w]:ptr[w] + cnt[w]] (built in increasing order), with room for min(K, the word's count) of them;
    held, the topics a word holds weighted by its count (``takes_buckets``). One pass over the counts."""
    n_topics = tot_wk.shape[1]
    ptr, top, cnt, held = _fill_lists(tot_wk, np.uint16(0) if n_topics <= 2**16 else np.int32(0))
    return (ptr, top, cnt), held


def no_lists(n_topics: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The placeholder lists of a dense sweep without buckets (its kernels never read them)."""
    return np.zeros(0, np.int64), np.zeros(0, np.uint16 if n_topics <= 2**16 else np.int32), np.zeros(0, np.int64)


def takes_buckets(held: float, n_topics: int) -> bool:
    """True if the words hold, weighted by their counts, at most K / BUCKETS_FROM topics (``word_lists``' held: a
    state's choice, so the same state always takes the same kernel)."""
    return held * BUCKETS_FROM <= n_topics


@njit(cache=True, nogil=True)
def _fill_lists(tot_wk, zero):
    n_words, n_topics = tot_wk.shape
    ptr = np.zeros(n_words + 1, np.int64)
    row_tot = np.empty(n_words, np.int64)
    for v in range(n_words):
        row_tot[v] = tot_wk[v].sum()
        ptr[v + 1] = ptr[v] + min(n_topics, row_tot[v])
    top = np.empty(ptr[n_words], type(zero))
    cnt = np.zeros(n_words, np.int64)
    held = 0.0
    for v in range(n_words):
        row = tot_wk[v]
        at = ptr[v]
        for k in range(n_topics):
            if row[k] > 0:
                top[at] = k
                at += 1
        cnt[v] = at - ptr[v]
        held += cnt[v] * row_tot[v]
    return ptr, top, cnt, held / max(row_tot.sum(), 1)


@njit(inline="always", cache=True)
def _move(k, joins, ndk, nwk, tot_k, inv, inv_up, inv_dn, q, alpha, vbeta, s_sum, r_sum):
    """A token leaves (joins False) or joins topic k: its counts, the inverse tables and q_k; returns S and R with
    topic k's terms taken at its new counts."""
    a = alpha_at(alpha, k)
    s_sum -= a * inv[k]
    r_sum -= ndk[k] * inv[k]
    if joins:
        join_topic(k, ndk, nwk, tot_k, inv, inv_up, inv_dn, vbeta)
    else:
        leave_topic(k, ndk, nwk, tot_k, inv, inv_up, inv_dn, vbeta)
    s_sum += a * inv[k]
    r_sum += ndk[k] * inv[k]
    q[k] = (ndk[k] + a) * inv[k]
    return s_sum, r_sum


@njit(inline="always", cache=True)
def _q_bucket(nwk, q, top, base, n, run):
    """Q = Σ N_wk·q_k over the word's listed topics, run[j] the running sum after the j-th."""
    total = 0.0
    for j in range(n):
        k = top[base + j]
        total += nwk[k] * q[k]
        run[j] = total
    return total


@njit(inline="always", cache=True)
def _walk_r(t, dtop, dn, ndk, inv, fallback):
    """The document topic in whose share of R = Σ n_dk/(N_k + Vβ) t lies (the last positive one past the end)."""
    c = 0.0
    k_new = fallback
    for j in range(dn):
        k = dtop[j]
        if ndk[k] > 0:
            k_new = np.uint64(k)
            c += ndk[k] * inv[k]
            if t < c:
                break
    return k_new


@njit(inline="always", cache=True)
def _walk_s(t, alpha, inv):
    """The topic in whose share of S = Σ α_k/(N_k + Vβ) t lies (the last one past the end)."""
    c = 0.0
    for k in range(inv.shape[0]):
        c += alpha_at(alpha, k) * inv[k]
        if t < c:
            return np.uint64(k)
    return np.uint64(inv.shape[0] - 1)


@njit(cache=True, nogil=True, error_model="numpy")
def bucket_block(words, tok, starts, ends, doc_ptr, d0, d1, z, n_dk, tot_wk, tot_k, ptr, top, cnt, alpha, beta,
                 vbeta, rng, stream):
    """``_gibbs_block.dense_block`` by the buckets, in place: the tokens doc_ptr[d] + tok[starts[d]:ends[d]] (tok
    None: positions starts[d]..ends[d]-1) of documents d0..d1-1, whose whole token ranges are
    doc_ptr[d]..doc_ptr[d+1]; the word lists (ptr, top, cnt) of ``word_lists`` for tot_wk, kept exact."""
    n_topics = tot_k.shape[0]
    inv, inv_up, inv_dn = inverse_tables(tot_k, vbeta)
    q = aligned_zeros(n_topics)
    for k in range(n_topics):
        q[k] = alpha_at(alpha, k) * inv[k]
    s_sum = 0.0
    updates = n_topics + 1  # sum S afresh at the first document
    dtop = np.empty(n_topics, np.int64)
    seen = np.full(n_topics, -1, np.int64)  # seen[k] == d: topic k is on document d's list
    run = aligned_zeros(n_topics)
    own = take_stream(rng, stream)
    for d in range(d0, d1):
        if starts[d] == ends[d]:
            continue
        ndk = n_dk[d]
        if updates > n_topics:
            s_sum = 0.0
            for k in range(n_topics):
                s_sum += alpha_at(alpha, k) * inv[k]
            updates = 0
        dn = 0
        r_sum = 0.0
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            k = z[i]
            if seen[k] != d:
                seen[k] = d
                dtop[dn] = k
                dn += 1
                q[k] = (ndk[k] + alpha_at(alpha, k)) * inv[k]
                r_sum += ndk[k] * inv[k]
        for ii in range(starts[d], ends[d]):
            i = ii if tok is None else doc_ptr[d] + tok[ii]
            w = np.uint64(words[i])
            nwk = tot_wk[w]
            base = ptr[w]
            n = cnt[w]
            k = np.uint64(z[i])
            s_sum, r_sum = _move(k, False, ndk, nwk, tot_k, inv, inv_up, inv_dn, q, alpha, vbeta, s_sum, r_sum)
            if nwk[k] == 0:  # off the word's list: the last one takes its place
                j = base
                while top[j] != k:
                    j += 1
                n -= 1
                top[j] = top[base + n]
            q_sum = _q_bucket(nwk, q, top, base, n, run)
            t = next_double(own, OWN_ROW) * (q_sum + beta * (r_sum + s_sum))
            if t < q_sum:
                j = 0
                for x in range(n):
                    j += run[x] <= t
                k = np.uint64(top[base + min(j, n - 1)])
            else:
                t = (t - q_sum) / beta
                if t < r_sum:
                    k = _walk_r(t, dtop, dn, ndk, inv, np.uint64(n_topics - 1))
                else:
                    k = _walk_s(t - r_sum, alpha, inv)
            if nwk[k] == 0:
                top[base + n] = k
                n += 1
            cnt[w] = n
            s_sum, r_sum = _move(k, True, ndk, nwk, tot_k, inv, inv_up, inv_dn, q, alpha, vbeta, s_sum, r_sum)
            if seen[k] != d:
                seen[k] = d
                dtop[dn] = k
                dn += 1
            z[i] = k
            updates += 2
        for j in range(dn):  # q back to α_k/(N_k + Vβ) outside the document
            k = dtop[j]
            q[k] = alpha_at(alpha, k) * inv[k]
    put_stream(rng, stream, own)
