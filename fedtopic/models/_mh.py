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
accepting t over s with probability min(1, π(t) q(s) / (π(s) q(t))) leaves π invariant
*given the tables* (the chi-square tests in tests/test_models_sparse.py).

The sweep as a whole is not exact: N̂ also remembers where the tokens visited earlier
in the sweep *were*, information correlated with the token being sampled, so the
composition of these steps is not a composition of fixed π-invariant kernels. A
whole-sweep chi-square over every state of a 6-token corpus (the harness of
tests/test_models_cycle_mh.py) rejects it (p ≈ 3e-7 from 40,000 chains); the bias is of
AD-LDA's kind (stale counts) and shrinks with the corpus. sampler="mh" (_cycle_mh.py)
reads only the current state and passes the same test.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedtopic.models._dense import dense_draw, dense_scratch
from fedtopic.models._prefetch import prefetch
from fedtopic.models.rng import OWN_ROW, next_double, put_stream, take_stream

_AHEAD = 6  # word-major sweep: prefetch the document list this many tokens ahead


@njit(inline="always", cache=True)
def _doc_topics(ndk, dtop, dcnt, base):
    """Write the topics with ndk[k] > 0 and their counts to dtop/dcnt[base:base+n]; return n."""
    n = 0
    for k in range(ndk.shape[0]):
        if ndk[k] > 0:
            dtop[base + n] = k
            dcnt[base + n] = ndk[k]
            n += 1
    return n


@njit(inline="always", cache=True)
def _find_or_end(dtop, base, n_t, k):
    """Index j (relative to base) with dtop[base + j] == k, or n_t if k is not in the list."""
    for j in range(n_t):
        if dtop[base + j] == k:
            return j
    return n_t


@njit(inline="always", cache=True)
def _count(dtop, dcnt, base, n_t, k):
    """The document's count of topic k (0 if absent) from its compact list."""
    j = _find_or_end(dtop, base, n_t, k)
    return dcnt[base + j] if j < n_t else 0


@njit(inline="always", cache=True)
def first_above(cum, n, u):
    """The first j < n with cum[j] > u (n − 1 if none), by binary search in the running sums cum[:n]."""
    lo = 0
    hi = n - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if cum[mid] <= u:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(inline="always", cache=True)
def _alias_mh_token(
    s, s0, w, phi, swk, dtop, dcnt, base, n_t, cum, alpha, beta, vbeta, stale_inv, stale_k,
    ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, mh_steps, rng, stream,
):
    """MH chain of mh_steps proposals for a token of word w from topic s (counts exclude it); returns the topic.

    s0: the token's topic in the stale counts; dtop/dcnt[base:base+n_t]: the document's topics and counts;
    phi float64[K] = (N_wk + β)/(N_k + Vβ) for the live counts.
    """
    n_topics = phi.shape[0]
    p_doc = 0.0
    for j in range(n_t):
        k = dtop[base + j]
        p_doc += dcnt[base + j] * phi[k]
        cum[j] = p_doc
    q_s0_with = (swk[s0] + beta) * stale_inv[s0]
    q_s0 = (swk[s0] - 1 + beta) / (stale_k[s0] - 1 + vbeta)  # q̂¬i(s0)
    keep_s0 = q_s0 / q_s0_with
    a_word = alpha * (mass[w] + s_mass - q_s0_with + q_s0)  # α Σ_k q̂¬i(k)
    for _ in range(mh_steps):
        u = next_double(rng, stream) * (p_doc + a_word)
        if u < p_doc:  # document part: binary search in the running sums
            t = dtop[base + first_above(cum, n_t, u)]
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
            phi_t = phi[t]
            phi_s = phi[s]
            nd_t = _count(dtop, dcnt, base, n_t, t)
            nd_s = _count(dtop, dcnt, base, n_t, s)
            q_t = nd_t * phi_t + alpha * (q_s0 if t == s0 else (swk[t] + beta) * stale_inv[t])
            q_s = nd_s * phi_s + alpha * (q_s0 if s == s0 else (swk[s] + beta) * stale_inv[s])
            if next_double(rng, stream) * ((nd_s + alpha) * phi_s * q_t) < (nd_t + alpha) * phi_t * q_s:
                s = t
    return s


@njit(cache=True, nogil=True)
def _word_major(words, lo, hi, n_words):
    """(word_ptr int64[V+1], order int64[hi-lo]): tokens lo..hi-1 grouped by word (counting sort, stable).

    The tokens of word w are order[word_ptr[w]:word_ptr[w+1]], in corpus order.
    """
    word_ptr = np.zeros(n_words + 1, dtype=np.int64)
    for i in range(lo, hi):
        word_ptr[words[i] + 1] += 1
    for w in range(n_words):
        word_ptr[w + 1] += word_ptr[w]
    fill = word_ptr[:-1].copy()
    order = np.empty(hi - lo, dtype=np.int64)
    for i in range(lo, hi):
        w = words[i]
        order[fill[w]] = i
        fill[w] += 1
    return word_ptr, order


@njit(cache=True, fastmath=True, nogil=True, error_model="numpy")
def mh_shard(
    words, doc_ptr, d0, d1, z, n_dk, tot_wk, tot_k, stale_wk, stale_k,
    ptr, top, prob, alt, mass, s_prob, s_alt, s_mass,
    alpha, beta, vbeta, mh_steps, dense_above, rng, stream,
):
    """One sweep over the tokens of documents d0..d1-1 in place (other shapes as in _dense.dense_shard).

    tot_wk int32[V,K] / tot_k int64[K]: live totals (updated); stale_wk / stale_k: the totals
    the alias tables were built from (read only). Tokens are visited word by word (a fixed
    scan order, so still a valid Gibbs sweep): the word's row of tot_wk stays in cache, and
    each document's topics and counts live in a compact list (dtop/dcnt, capacity = its
    length), so the exact document part reads O(k_d) contiguous entries instead of
    gathering from two K-wide rows; n_dk is not touched in the loop but rebuilt from the
    lists afterwards, and the lists of the next tokens' documents are prefetched. A token whose document holds more than dense_above
    other topics is drawn exactly from Eq. 10 by the dense O(K) draw instead (both moves
    leave Eq. 10 invariant and the choice depends on the other tokens only).
    """
    n_topics = tot_k.shape[0]
    lo = doc_ptr[d0]
    hi = doc_ptr[d1]
    inv = np.empty(n_topics, dtype=np.float64)
    stale_inv = np.empty(n_topics, dtype=np.float64)
    for k in range(n_topics):
        inv[k] = 1.0 / (tot_k[k] + vbeta)
        stale_inv[k] = 1.0 / (stale_k[k] + vbeta)
    own = take_stream(rng, stream)
    word_ptr, order = _word_major(words, lo, hi, tot_wk.shape[0])
    doc_of = np.empty(hi - lo, dtype=np.int32)
    dtop = np.empty(hi - lo, dtype=np.int32)
    dcnt = np.empty(hi - lo, dtype=np.int32)
    n_top = np.empty(d1 - d0, dtype=np.int32)
    for d in range(d0, d1):
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            doc_of[i - lo] = d
        n_top[d - d0] = _doc_topics(n_dk[d], dtop, dcnt, doc_ptr[d] - lo) if doc_ptr[d + 1] > doc_ptr[d] else 0
    # token j of the word-major scan: document doc_w[j], topic z_w[j] (copied back after the sweep)
    doc_w = np.empty(hi - lo, dtype=np.int32)
    z_w = np.empty(hi - lo, dtype=np.int32)
    for j in range(hi - lo):
        doc_w[j] = doc_of[order[j] - lo]
        z_w[j] = z[order[j]]
    cum = np.empty(n_topics, dtype=np.float64)
    ndk = np.zeros(n_topics, dtype=np.int32)  # dense row for the dense fallback
    p = dense_scratch(n_topics)
    phi = np.empty(n_topics, dtype=np.float64)  # (N_wk + β)/(N_k + Vβ) for the current word w
    for w in range(tot_wk.shape[0]):
        nwk = tot_wk[w]
        swk = stale_wk[w]
        if word_ptr[w + 1] > word_ptr[w]:
            for k in range(n_topics):
                phi[k] = (nwk[k] + beta) * inv[k]
        for j in range(word_ptr[w], word_ptr[w + 1]):
            if j + _AHEAD < hi - lo:  # the document list of a token _AHEAD steps on: random place, fetch early
                b_ahead = doc_ptr[doc_w[j + _AHEAD]] - lo
                for e in range(0, n_top[doc_w[j + _AHEAD] - d0], 16):
                    prefetch(dtop, b_ahead + e)
                    prefetch(dcnt, b_ahead + e)
            d = doc_w[j]
            base = doc_ptr[d] - lo
            n_t = n_top[d - d0]
            k = z_w[j]
            e = _find_or_end(dtop, base, n_t, k)
            dcnt[base + e] -= 1
            if dcnt[base + e] == 0:  # drop k from the document's list
                n_t -= 1
                dtop[base + e] = dtop[base + n_t]
                dcnt[base + e] = dcnt[base + n_t]
            nwk[k] -= 1
            tot_k[k] -= 1
            inv[k] = 1.0 / (tot_k[k] + vbeta)
            phi[k] = (nwk[k] + beta) * inv[k]
            if n_t > dense_above:
                for e in range(n_t):
                    ndk[dtop[base + e]] = dcnt[base + e]
                k = dense_draw(ndk, nwk, inv, p, alpha, beta, next_double(own, OWN_ROW))
                for e in range(n_t):
                    ndk[dtop[base + e]] = 0
            else:
                k = _alias_mh_token(
                    k, k, w, phi, swk, dtop, dcnt, base, n_t, cum, alpha, beta, vbeta, stale_inv, stale_k,
                    ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, mh_steps, own, OWN_ROW,
                )
            z_w[j] = k
            e = _find_or_end(dtop, base, n_t, k)
            if e == n_t:
                dtop[base + n_t] = k
                dcnt[base + n_t] = 1
                n_top[d - d0] = n_t + 1
            else:
                dcnt[base + e] += 1
                n_top[d - d0] = n_t
            nwk[k] += 1
            tot_k[k] += 1
            inv[k] = 1.0 / (tot_k[k] + vbeta)
            phi[k] = (nwk[k] + beta) * inv[k]
    for j in range(hi - lo):
        z[order[j]] = z_w[j]
    for d in range(d0, d1):
        n_dk[d, :] = 0
        base = doc_ptr[d] - lo
        for e in range(n_top[d - d0]):
            n_dk[d, dtop[base + e]] = dcnt[base + e]
    put_stream(rng, stream, own)


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
    dtop = np.empty(n_topics, dtype=np.int32)
    dcnt = np.empty(n_topics, dtype=np.int32)
    cum = np.empty(n_topics, dtype=np.float64)
    ndk = n_dk[d]
    n_t = _doc_topics(ndk, dtop, dcnt, 0)
    phi = (tot_wk[w] + beta) * inv
    out = np.empty(n_draws, dtype=np.int32)
    for r in range(n_draws):
        out[r] = _alias_mh_token(
            start[r], z[i], w, phi, stale_wk[w], dtop, dcnt, 0, n_t, cum, alpha, beta, vbeta,
            stale_inv, stale_k, ptr, top, prob, alt, mass, s_prob, s_alt, s_mass, mh_steps, rng, stream,
        )
    return out
