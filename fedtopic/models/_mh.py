"""Large-K sampler: alias-table Metropolis–Hastings (LightLDA, Yuan et al. 2015; iFTM §3).

Target for token i (word w, document d), counts without token i (Eq. 10):

    π(k) ∝ (n_dk + α) · (N_wk + β) / (N_k + Vβ)

Each MH cycle proposes twice from distributions that do not depend on the
chain's current state, so each step is an independence sampler that leaves π
exactly invariant (for any start):

* word proposal  q_w(k) ∝ (N̂¬i_wk + β)/(N̂¬i_k + Vβ), N̂ = totals frozen at the start
  of the sweep, N̂¬i the same without token i (whose sweep-start topic they contain);
  drawn in O(1) from alias tables of N̂ (_alias.py) plus a rejection step for token
  i's own topic; accept t over s with probability min(1, π(t) q_w(s) / (π(s) q_w(t))).
* doc proposal   q_d(k) ∝ n_dk + α (without token i): with probability
  n_d/(n_d + Kα) the topic of a uniformly chosen *other* token of d, else a
  uniform topic; the (n_dk + α) factors cancel and the acceptance is
  min(1, [(N_wt + β)/(N_t + Vβ)] / [(N_ws + β)/(N_s + Vβ)]).

Departures from LightLDA, on purpose: LightLDA counts token i's own topic in both
proposals, which makes them depend on the token's state, so the usual acceptance
ratio no longer leaves Eq. 10 invariant (measurably: higher training likelihood,
worse held-out perplexity at K=1000). Excluding token i keeps the kernel exact.
Cost per token: O(mh_steps), independent of K.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fedtopic.models.rng import next_double


@njit(inline="always", cache=True)
def _mh_chain(
    s, i, w, ndk, wrow, inv, doc_lo, n_other, z, alpha, beta, k_alpha,
    stale_inv, stale_k, vbeta, ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, mh_steps, rng, stream,
):
    """Run mh_steps (word, doc) proposal cycles from topic s; counts exclude token i. Returns the topic.

    z[i] = s0 is token i's topic when the alias tables were built, so the stale counts
    contain it; the word proposal must not (else it would depend on the token's own state
    and the chain would not leave Eq. 10 invariant): a proposal t = s0 is kept with
    probability q¬i(s0)/q(s0) ≤ 1 and redrawn otherwise (rejection sampling of q¬i).
    """
    n_topics = inv.shape[0]
    s0 = z[i]
    q_s0 = (wrow[s0, 1] - 1 + beta) / (stale_k[s0] - 1 + vbeta)  # q¬i(s0)
    keep_s0 = q_s0 / ((wrow[s0, 1] + beta) * stale_inv[s0])
    for _ in range(mh_steps):
        # word proposal ~ q¬i: the word's sparse part with chance mass[w]/(mass[w]+s_mass), else smoothing
        for _try in range(100_000):
            u = next_double(rng, stream) * (mass[w] + s_mass)
            if u < mass[w]:
                n = ptr[w + 1] - ptr[w]
                x = (u / mass[w]) * n
                e = min(int(x), n - 1)
                slot = ptr[w] + e
                t = top[slot] if x - e < prob[slot] else alt[slot]
            else:
                x = ((u - mass[w]) / s_mass) * n_topics
                e = min(int(x), n_topics - 1)
                t = e if x - e < s_prob[e] else s_alt[e]
            if t != s0 or next_double(rng, stream) < keep_s0:
                break
        if t != s:
            pi_t = (ndk[t] + alpha) * (wrow[t, 0] + beta) * inv[t]
            pi_s = (ndk[s] + alpha) * (wrow[s, 0] + beta) * inv[s]
            q_t = q_s0 if t == s0 else (wrow[t, 1] + beta) * stale_inv[t]
            q_s = q_s0 if s == s0 else (wrow[s, 1] + beta) * stale_inv[s]
            if next_double(rng, stream) * (pi_s * q_t) < pi_t * q_s:
                s = t
        # doc proposal ~ (n_dk¬i + α): another token's topic, or a uniform topic
        u = next_double(rng, stream) * (n_other + k_alpha)
        if u < n_other:
            pos = doc_lo + int(u)
            if pos >= i:
                pos += 1
            t = z[pos]
        else:
            t = min(int((u - n_other) / alpha), n_topics - 1)
        if t != s:
            if next_double(rng, stream) * ((wrow[s, 0] + beta) * inv[s]) < (wrow[t, 0] + beta) * inv[t]:
                s = t
    return s


@njit(cache=True, fastmath=True, nogil=True, error_model="numpy")
def mh_shard(
    words, doc_ptr, d0, d1, z, n_dk, work, tot_k, stale_k,
    ptr, top, prob, alt, mass, s_prob, s_alt, s_mass,
    alpha, beta, vbeta, mh_steps, rng, stream,
):
    """One MH sweep over documents d0..d1-1 in place (other shapes as in _dense.dense_shard).

    work int32[V,K,2]: [..., 0] the live total word-topic counts (updated), [..., 1] the
    totals the alias tables were built from (read only; interleaved so that a count and
    its stale twin share a cache line). tot_k int64[K] live totals, stale_k int64[K] stale.
    """
    n_topics = tot_k.shape[0]
    k_alpha = n_topics * alpha
    inv = np.empty(n_topics, dtype=np.float64)
    stale_inv = np.empty(n_topics, dtype=np.float64)
    for k in range(n_topics):
        inv[k] = 1.0 / (tot_k[k] + vbeta)
        stale_inv[k] = 1.0 / (stale_k[k] + vbeta)
    for d in range(d0, d1):
        ndk = n_dk[d]
        lo = doc_ptr[d]
        n_other = doc_ptr[d + 1] - lo - 1
        for i in range(lo, doc_ptr[d + 1]):
            w = words[i]
            wrow = work[w]
            k = z[i]
            ndk[k] -= 1
            wrow[k, 0] -= 1
            tot_k[k] -= 1
            inv[k] = 1.0 / (tot_k[k] + vbeta)
            k = _mh_chain(
                k, i, w, ndk, wrow, inv, lo, n_other, z, alpha, beta, k_alpha,
                stale_inv, stale_k, vbeta, ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, mh_steps, rng, stream,
            )
            z[i] = k
            ndk[k] += 1
            wrow[k, 0] += 1
            tot_k[k] += 1
            inv[k] = 1.0 / (tot_k[k] + vbeta)


@njit(cache=True, nogil=True)
def mh_conditional_draws(
    n_draws, start, i, w, d, words, doc_ptr, z, n_dk, work, tot_k, stale_k,
    ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, alpha, beta, vbeta, mh_steps, rng, stream,
):
    """int32[n_draws]: the chain's topic for token i after mh_steps cycles from start[r], repeated.

    Counts must already exclude token i; nothing is modified except the RNG. For tests
    (chi-square against Eq. 10).
    """
    n_topics = tot_k.shape[0]
    inv = np.empty(n_topics, dtype=np.float64)
    stale_inv = np.empty(n_topics, dtype=np.float64)
    for k in range(n_topics):
        inv[k] = 1.0 / (tot_k[k] + vbeta)
        stale_inv[k] = 1.0 / (stale_k[k] + vbeta)
    lo = doc_ptr[d]
    n_other = doc_ptr[d + 1] - lo - 1
    out = np.empty(n_draws, dtype=np.int32)
    for r in range(n_draws):
        out[r] = _mh_chain(
            start[r], i, w, n_dk[d], work[w], inv, lo, n_other, z, alpha, beta, n_topics * alpha,
            stale_inv, stale_k, vbeta, ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, mh_steps, rng, stream,
        )
    return out


@njit(cache=True, parallel=True, nogil=True)
def interleave(live_wk, stale_wk):
    """int32[V,K,2] with [..., 0] = live_wk and [..., 1] = stale_wk."""
    n_words, n_topics = live_wk.shape
    work = np.empty((n_words, n_topics, 2), dtype=np.int32)
    for v in prange(n_words):
        for k in range(n_topics):
            work[v, k, 0] = live_wk[v, k]
            work[v, k, 1] = stale_wk[v, k]
    return work


@njit(cache=True, parallel=True, nogil=True)
def live_counts(work, out):
    """out[v, k] = work[v, k, 0]."""
    for v in prange(work.shape[0]):
        for k in range(work.shape[1]):
            out[v, k] = work[v, k, 0]
