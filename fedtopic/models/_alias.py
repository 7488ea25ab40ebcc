"""Walker/Vose alias tables for the word proposal of the Metropolis–Hastings sampler.

The word proposal of LightLDA (Yuan et al. 2015; iFTM §3 uses the same) is

    q_w(k) ∝ (N̂_wk + β) / (N̂_k + Vβ) = N̂_wk/(N̂_k + Vβ)  +  β/(N̂_k + Vβ)

with N̂ the total counts frozen at the start of the sweep. The first part is
sparse (topics the word has) and gets one alias table per word; the second is
the same for every word and gets one shared table. Building costs O(V·K) to scan
plus O(nnz) for the tables, once per sweep; drawing costs O(1).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_CHUNKS = 64  # word chunks of the parallel table build (each allocates its own scratch)


@njit(cache=True, nogil=True)
def _vose(weights: np.ndarray, prob: np.ndarray, alt: np.ndarray, small: np.ndarray, large: np.ndarray) -> float:
    """Fill prob/alt (length n) for the given weights (float64[n] > 0); return their sum.

    prob[e] is the chance of keeping slot e (else take alt[e], a slot index).
    """
    n = weights.shape[0]
    total = 0.0
    for e in range(n):
        total += weights[e]
    ns = 0
    nl = 0
    for e in range(n):
        prob[e] = weights[e] * n / total
        if prob[e] < 1.0:
            small[ns] = e
            ns += 1
        else:
            large[nl] = e
            nl += 1
    while ns > 0 and nl > 0:
        ns -= 1
        s = small[ns]
        g = large[nl - 1]
        alt[s] = g
        prob[g] = (prob[g] + prob[s]) - 1.0
        if prob[g] < 1.0:
            nl -= 1
            small[ns] = g
            ns += 1
    for e in range(nl):
        prob[large[e]] = 1.0
        alt[large[e]] = large[e]
    for e in range(ns):  # rounding leftovers
        prob[small[e]] = 1.0
        alt[small[e]] = small[e]
    return total


@njit(cache=True, nogil=True, parallel=True)
def build_word_alias(tot_wk: np.ndarray, tot_k: np.ndarray, beta: float, vbeta: float):
    """Alias tables of q_w for every word from total counts tot_wk int32[V,K], tot_k int64[K].

    Returns (ptr int64[V+1], top int32[nnz], prob float64[nnz], alt int32[nnz] (topic ids),
    mass float64[V] = Σ_k N̂_wk/(N̂_k+Vβ), s_prob float64[K], s_alt int32[K], s_mass).
    Words are handled in parallel chunks (the tables do not depend on the thread count).
    """
    n_words, n_topics = tot_wk.shape
    inv = np.empty(n_topics, dtype=np.float64)
    for k in range(n_topics):
        inv[k] = 1.0 / (tot_k[k] + vbeta)
    ptr = np.zeros(n_words + 1, dtype=np.int64)
    for w in prange(n_words):
        c = 0
        for k in range(n_topics):
            if tot_wk[w, k] != 0:
                c += 1
        ptr[w + 1] = c
    for w in range(n_words):
        ptr[w + 1] += ptr[w]
    nnz = ptr[n_words]
    top = np.empty(nnz, dtype=np.int32)
    prob = np.empty(nnz, dtype=np.float64)
    alt = np.empty(nnz, dtype=np.int32)
    mass = np.zeros(n_words, dtype=np.float64)
    n_chunks = min(n_words, _CHUNKS)
    for c in prange(n_chunks):
        weights = np.empty(n_topics, dtype=np.float64)
        slot_alt = np.empty(n_topics, dtype=np.int32)
        small = np.empty(n_topics, dtype=np.int32)
        large = np.empty(n_topics, dtype=np.int32)
        for w in range(c * n_words // n_chunks, (c + 1) * n_words // n_chunks):
            base = ptr[w]
            n = 0
            for k in range(n_topics):
                cnt = tot_wk[w, k]
                if cnt != 0:
                    top[base + n] = k
                    weights[n] = cnt * inv[k]
                    n += 1
            if n == 0:
                continue
            mass[w] = _vose(weights[:n], prob[base : base + n], slot_alt[:n], small, large)
            for e in range(n):
                alt[base + e] = top[base + slot_alt[e]]
    weights = np.empty(n_topics, dtype=np.float64)
    small = np.empty(n_topics, dtype=np.int32)
    large = np.empty(n_topics, dtype=np.int32)
    for k in range(n_topics):
        weights[k] = beta * inv[k]
    s_prob = np.empty(n_topics, dtype=np.float64)
    s_alt = np.empty(n_topics, dtype=np.int32)
    s_mass = _vose(weights, s_prob, s_alt, small, large)
    return ptr, top, prob, alt, mass, s_prob, s_alt, s_mass
