"""Large-K sampler: alias-table Metropolis–Hastings with an exact document part (AliasLDA).

Li, Ahmed, Ravi & Smola (KDD 2014), the alias + MH family that LightLDA and iFTM §3
also use. Target for token i (word w, document d), counts without token i (Eq. 10):

    π(k) ∝ (n_dk + α) · (N_wk + β) / (N_k + Vβ)
         =  n_dk (N_wk + β)/(N_k + Vβ)   +   α (N_wk + β)/(N_k + Vβ)
            [sparse in d: exact, O(k_d)]      [dense: stale copy + alias, O(1)]

Proposal q(k) = n_dk (N_wk + β)/(N_k + Vβ) + α q̂(k), with q̂(k) = (N̂¬i_wk + β)/(N̂¬i_k + Vβ)
and N̂ the totals frozen when the sweep started (the alias tables, _alias.py). The
document part is computed exactly over the k_d topics present in d (a topic list kept
up to date as tokens move), so q differs from π only by the staleness of N̂ and MH
accepts almost every proposal; the mixing per sweep is that of exact Gibbs at a cost
of O(k_d + mh_steps) per token instead of O(K).

Exactness: N̂ contains token i itself at s0 = its topic when the sweep started. A
proposal built from that would depend on the token's own state, and the usual
acceptance ratio would then not leave Eq. 10 invariant (measured: higher training
likelihood, worse held-out perplexity). So q̂ excludes token i: a word-part draw of
s0 is kept with probability q̂¬i(s0)/q̂(s0) ≤ 1 and redrawn otherwise. q then depends
only on the other tokens, every MH step is an independence sampler, and
accepting t over s with probability min(1, π(t) q(s) / (π(s) q(t))) keeps π exact.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedtopic.models._dense import dense_draw, dense_scratch
from fedtopic.models.rng import next_double


@njit(inline="always", cache=True)
def _doc_topics(ndk, tlist, tpos):
    """Fill tlist[:n] with the topics having ndk[k] > 0 (tpos[k] = index in tlist); return n."""
    n = 0
    for k in range(ndk.shape[0]):
        if ndk[k] > 0:
            tlist[n] = k
            tpos[k] = n
            n += 1
    return n


@njit(inline="always", cache=True)
def _alias_mh_token(
    s, i, w, ndk, nwk, swk, inv, z, tlist, n_t, cum, alpha, beta, vbeta, stale_inv, stale_k,
    ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, mh_steps, rng, stream,
):
    """MH chain of mh_steps proposals for token i from topic s (counts exclude i); returns the topic."""
    n_topics = inv.shape[0]
    p_doc = 0.0
    for j in range(n_t):
        k = tlist[j]
        p_doc += ndk[k] * (nwk[k] + beta) * inv[k]
        cum[j] = p_doc
    s0 = z[i]
    q_s0_with = (swk[s0] + beta) * stale_inv[s0]
    q_s0 = (swk[s0] - 1 + beta) / (stale_k[s0] - 1 + vbeta)  # q̂¬i(s0)
    keep_s0 = q_s0 / q_s0_with
    a_word = alpha * (mass[w] + s_mass - q_s0_with + q_s0)  # α Σ_k q̂¬i(k)
    for _ in range(mh_steps):
        u = next_double(rng, stream) * (p_doc + a_word)
        if u < p_doc:  # document part: binary search in the running sums
            lo = 0
            hi = n_t - 1
            while lo < hi:
                mid = (lo + hi) >> 1
                if cum[mid] <= u:
                    lo = mid + 1
                else:
                    hi = mid
            t = tlist[lo]
        else:  # word part ~ q̂¬i: alias draw (word's sparse counts or smoothing), s0 thinned
            for _try in range(1_000_000):
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
            phi_t = (nwk[t] + beta) * inv[t]
            phi_s = (nwk[s] + beta) * inv[s]
            q_t = ndk[t] * phi_t + alpha * (q_s0 if t == s0 else (swk[t] + beta) * stale_inv[t])
            q_s = ndk[s] * phi_s + alpha * (q_s0 if s == s0 else (swk[s] + beta) * stale_inv[s])
            if next_double(rng, stream) * ((ndk[s] + alpha) * phi_s * q_t) < (ndk[t] + alpha) * phi_t * q_s:
                s = t
    return s


@njit(cache=True, fastmath=True, nogil=True, error_model="numpy")
def mh_shard(
    words, doc_ptr, d0, d1, z, n_dk, tot_wk, tot_k, stale_wk, stale_k,
    ptr, top, prob, alt, mass, s_prob, s_alt, s_mass,
    alpha, beta, vbeta, mh_steps, dense_above, rng, stream,
):
    """One sweep over documents d0..d1-1 in place (other shapes as in _dense.dense_shard).

    tot_wk int32[V,K] / tot_k int64[K]: live totals (updated); stale_wk / stale_k: the totals
    the alias tables were built from (read only). A token whose document holds more than
    dense_above other topics is drawn exactly from Eq. 10 by the dense O(K) draw instead
    (cheaper there; both moves leave Eq. 10 invariant and the choice depends on the other
    tokens only, so the sweep stays exact).
    """
    n_topics = tot_k.shape[0]
    inv = np.empty(n_topics, dtype=np.float64)
    stale_inv = np.empty(n_topics, dtype=np.float64)
    for k in range(n_topics):
        inv[k] = 1.0 / (tot_k[k] + vbeta)
        stale_inv[k] = 1.0 / (stale_k[k] + vbeta)
    tlist = np.empty(n_topics, dtype=np.int32)
    tpos = np.empty(n_topics, dtype=np.int32)
    cum = np.empty(n_topics, dtype=np.float64)
    p, blk = dense_scratch(n_topics)
    for d in range(d0, d1):
        ndk = n_dk[d]
        n_t = _doc_topics(ndk, tlist, tpos)
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            w = words[i]
            nwk = tot_wk[w]
            k = z[i]
            ndk[k] -= 1
            if ndk[k] == 0:  # drop k from the document's topic list
                last = tlist[n_t - 1]
                tlist[tpos[k]] = last
                tpos[last] = tpos[k]
                n_t -= 1
            nwk[k] -= 1
            tot_k[k] -= 1
            inv[k] = 1.0 / (tot_k[k] + vbeta)
            if n_t > dense_above:
                k = dense_draw(ndk, nwk, inv, p, blk, alpha, beta, next_double(rng, stream))
            else:
                k = _alias_mh_token(
                    k, i, w, ndk, nwk, stale_wk[w], inv, z, tlist, n_t, cum, alpha, beta, vbeta, stale_inv, stale_k,
                    ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, mh_steps, rng, stream,
                )
            z[i] = k
            if ndk[k] == 0:
                tlist[n_t] = k
                tpos[k] = n_t
                n_t += 1
            ndk[k] += 1
            nwk[k] += 1
            tot_k[k] += 1
            inv[k] = 1.0 / (tot_k[k] + vbeta)


@njit(cache=True, nogil=True)
def mh_conditional_draws(
    n_draws, start, i, w, d, z, n_dk, tot_wk, tot_k, stale_wk, stale_k,
    ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, alpha, beta, vbeta, mh_steps, rng, stream,
):
    """int32[n_draws]: the MH chain's topic for token i after mh_steps proposals from start[r], repeated.

    Counts must already exclude token i (z[i] is its topic in the stale counts); nothing
    is modified except the RNG. For tests (chi-square against Eq. 10).
    """
    n_topics = tot_k.shape[0]
    inv = np.empty(n_topics, dtype=np.float64)
    stale_inv = np.empty(n_topics, dtype=np.float64)
    for k in range(n_topics):
        inv[k] = 1.0 / (tot_k[k] + vbeta)
        stale_inv[k] = 1.0 / (stale_k[k] + vbeta)
    tlist = np.empty(n_topics, dtype=np.int32)
    tpos = np.empty(n_topics, dtype=np.int32)
    cum = np.empty(n_topics, dtype=np.float64)
    ndk = n_dk[d]
    n_t = _doc_topics(ndk, tlist, tpos)
    out = np.empty(n_draws, dtype=np.int32)
    for r in range(n_draws):
        out[r] = _alias_mh_token(
            start[r], i, w, ndk, tot_wk[w], stale_wk[w], inv, z, tlist, n_t, cum, alpha, beta, vbeta,
            stale_inv, stale_k, ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, mh_steps, rng, stream,
        )
    return out
