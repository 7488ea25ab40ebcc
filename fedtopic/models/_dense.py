"""Dense O(K) collapsed Gibbs kernel (paper Eq. 10) for one document shard.

For token i (word w, document d) with its own counts removed:

    p(z_i = k) ∝ (n_dk + α) · (N_wk + β) / (N_k + Vβ)                       (Eq. 10)

where N are the *total* counts the caller hands in (this party's own counts
plus, in the federated case, a frozen matrix of everyone else's; see gibbs.py).
The Eq. 10 denominator Σ_s(n_ds + α) is the same for every k and is dropped.

Speed: counts are int32 rows read contiguously; 1/(N_k + Vβ) is cached in
``inv`` and refreshed only for the two topics a token leaves and joins, and so
is the document's factor q_k = (n_dk + α)/(N_k + Vβ) (``dense_shard``; set for
all K at each document's start), so a token's K products are q_k·(N_wk + β):
one conversion, add and multiply per topic instead of two of each (+15 % tokens
per second at K = 200, none at K = 50). The K products are one SIMD loop
(fastmath lets LLVM vectorise the sum). That loop runs before the token's own
counts are removed and before the previous token's q entry is refreshed, and the
two entries it read stale are patched after it (p_k recomputed, Σp adjusted by the
difference): a scalar store into q or the word row right before the loop read them
as vectors made the loop wait for the store (+10 % tokens per second at K = 50,
+7 % at K = 200 without that wait). Every regrouping of the arithmetic
moves p_k and Σp by a few ulps, which changes a draw only if t falls within
those ulps of a bucket edge (about 1e-16 per token): the fingerprint tests
(whole runs, bit-identical Φ) check that the draws stay. The draw
``t = u · Σp`` is located first among blocks of ``_B`` = 8 topics, each block's
sum taken only while t lies beyond it, and then inside the block: ~K/(2·_B) block
sums and ~_B/2 steps instead of K. The result is the k with Σ_{j<k} p_j ≤ t <
Σ_{j≤k} p_j, identical to ``searchsorted(cumsum(p), t, 'right')`` in reference.py
up to float rounding at bucket edges. (Summing every block first and searching the
sums after, with blocks of 16, cost ~14 % of the tokens per second at K = 200, and
was no faster at K = 50.)

Indices (topics, word ids, search positions) are unsigned: numba then emits no
negative-index wraparound code, which in the search loops cost ~5 % of a K=50 sweep.
The kernel trusts z and words to be in range; states read from files pass
``state.check_state`` first.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedtopic.models.rng import OWN_ROW, next_double, put_stream, take_stream

_B = 8  # topics per search block


@njit(inline="always", cache=True)
def dense_draw(ndk, nwk, inv, p, alpha, beta, u):
    """Topic drawn from Eq. 10 for one token (its counts removed) with the uniform u.

    ndk int32[K] document row, nwk int32[K] total word row, inv float64[K] = 1/(N_k + Vβ),
    p float64[⌈K/_B⌉·_B] scratch (zero past K, ``dense_scratch``).
    """
    total = 0.0
    for j in range(inv.shape[0]):
        v = (ndk[j] + alpha) * (nwk[j] + beta) * inv[j]
        p[j] = v
        total += v
    return locate(p, inv.shape[0], u * total)


@njit(inline="always", cache=True)
def locate(p, n_topics, t):
    """The k with Σ_{j<k} p_j ≤ t < Σ_{j≤k} p_j (the last topic if rounding puts t past the end).

    p float64[⌈K/_B⌉·_B] the unnormalised probabilities (zero past K).
    """
    one = np.uint64(1)
    b = np.uint64(0)
    nb1 = np.uint64(p.shape[0] // _B - 1)
    while b < nb1:  # the last block needs no sum: t lies in it if in no earlier one
        base = b * np.uint64(_B)
        s = 0.0
        for j in range(_B):
            s += p[base + np.uint64(j)]
        if t < s:
            break
        t -= s
        b += one
    k = b * np.uint64(_B)
    last = min(np.uint64(n_topics), k + np.uint64(_B)) - one
    while k < last and t >= p[k]:
        t -= p[k]
        k += one
    return np.int64(k)


@njit(cache=True, nogil=True)
def dense_scratch(n_topics):
    """The p scratch of dense_draw and locate: float64[⌈K/_B⌉·_B], zero past K."""
    return np.zeros((n_topics + _B - 1) // _B * _B, dtype=np.float64)


@njit(inline="always", cache=True)
def _refresh(k, ndk, nwk, inv, q, p, alpha, beta, total):
    """Topic k's q entry from its current counts and inv, and its product p_k; returns Σp with p_k's change."""
    q[k] = (ndk[k] + alpha) * inv[k]
    v = q[k] * (nwk[k] + beta)
    total += v - p[k]
    p[k] = v
    return total


@njit(cache=True, fastmath=True, nogil=True, error_model="numpy")
def dense_shard(
    words: np.ndarray,  # int32[N]
    doc_ptr: np.ndarray,  # int64[D+1]
    d0: int,
    d1: int,  # documents [d0, d1) form this shard
    z: np.ndarray,  # int32[N], updated
    n_dk: np.ndarray,  # int32[D,K], updated
    tot_wk: np.ndarray,  # int32[V,K] total word-topic counts, updated
    tot_k: np.ndarray,  # int64[K] total topic counts, updated
    alpha: float,
    beta: float,
    vbeta: float,  # V·β
    rng: np.ndarray,  # uint64[S,2]
    stream: int,
) -> None:
    """One sweep of exact collapsed Gibbs over the tokens of documents d0..d1-1, in place."""
    n_topics = tot_k.shape[0]
    p = dense_scratch(n_topics)
    inv = np.empty(n_topics, dtype=np.float64)
    for k in range(n_topics):
        inv[k] = 1.0 / (tot_k[k] + vbeta)
    q = np.empty(n_topics, dtype=np.float64)  # (n_dk + α) / (N_k + Vβ) of the current document
    own = take_stream(rng, stream)
    for d in range(d0, d1):
        ndk = n_dk[d]
        for k in range(n_topics):
            q[k] = (ndk[k] + alpha) * inv[k]
        joined = -1  # the topic the previous token joined, whose q entry is still the old one
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            w = np.uint64(words[i])
            nwk = tot_wk[w]
            total = 0.0
            for j in range(n_topics):  # with the two stale entries, fixed below
                v = q[j] * (nwk[j] + beta)
                p[j] = v
                total += v
            if joined >= 0:
                total = _refresh(np.uint64(joined), ndk, nwk, inv, q, p, alpha, beta, total)
            k = np.uint64(z[i])
            ndk[k] -= 1
            nwk[k] -= 1
            tot_k[k] -= 1
            inv[k] = 1.0 / (tot_k[k] + vbeta)
            total = _refresh(k, ndk, nwk, inv, q, p, alpha, beta, total)
            k = np.uint64(locate(p, n_topics, next_double(own, OWN_ROW) * total))
            z[i] = k
            ndk[k] += 1
            nwk[k] += 1
            tot_k[k] += 1
            inv[k] = 1.0 / (tot_k[k] + vbeta)
            joined = np.int64(k)
    put_stream(rng, stream, own)
