"""iFTM's private Metropolis–Hastings sweep for LDA (Jiang et al., Alg. 1 lines 11–21) as numba kernels.

Partially collapsed: θ is integrated out, Φ is explicit (drawn by the driver
from Dir(C^KW + β) after each local iteration, Eq. 7). The target for token i of
document d is Eq. 6 with Eq. 8's likelihood over its privatised vector n̂_di:

    π(k) ∝ (Ĉ^DK_dk + α) · exp(Σ_w′ n̂_diw′ log φ_kw′)

(Ĉ excludes the token). Two proposals alternate per token (Alg. 1 l. 16–19):

* doc proposal q_d(k) ∝ C^DK_dk + α (token included), drawn in O(1) by taking
  the topic of a uniformly chosen token of d with probability N_d/(N_d + Kα),
  else a uniform topic (the same distribution as an alias table of Eq. 17);
* word proposal q_w(k) ∝ (C^KW_kw + β)/(C^KW_k + Vβ) (Eq. 20) from an alias
  table built at the start of the sweep, for the word w whose privatised value
  is largest in n̂_di (the true word at ε = ∞; a function of n̂ only, so the
  sampler never reads the raw word).

Each is accepted with the standard MH ratio π(k′)q(k|k′)/(π(k)q(k′|k)).
For the doc proposal the reverse move's proposal counts the token at k′, so
q(k|k′) ∝ Ĉ_dk + α and q(k′|k) ∝ Ĉ_dk′ + α: the doc-topic factors cancel and
the ratio is P(w|k′,Φ)/P(w|k,Φ), as in LightLDA. Eq. 19 as printed mixes Ĉ
and C and is off by (Ĉ_dk + 1 + α)/(Ĉ_dk + α); Eqs. 18 and 21 print the
proposal ratio upside down. For the word proposal (fixed within the sweep) the
ratio is Eq. 22's. The tables are rebuilt from C^KW once per sweep, as
LightLDA does (a stale proposal is still a valid one within the sweep). C^KW
holds the privatised weights of the tokens assigned to each topic (the sum of
their n̂ vectors), kept up to date as tokens move; nothing here reads a raw
count. Every token's n̂ is regenerated from ``privatize`` when visited.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from fedtopic.models._alias import _vose
from fedtopic.models.normal import xo_double
from fedtopic.models.privatize import privatized_vector


@njit(inline="always", cache=True)
def _loglik(log_phi_k, words, vals, m):
    s = 0.0
    for e in range(m):
        s += vals[e] * log_phi_k[words[e]]
    return s


@njit(inline="always", cache=True)
def _argmax_word(words, vals, m):
    best, arg = -1e300, words[0]
    for e in range(m):
        if vals[e] > best:
            best, arg = vals[e], words[e]
    return arg


@njit(inline="always", cache=True)
def doc_proposal(n, k_alpha, n_topics, s0, s1):
    """Eq. 17's doc proposal q(k) ∝ C_dk + α in O(1): with probability n/(n + Kα) take the topic of a uniformly
    chosen member j of the document's n (tokens, or sentences), else a uniform topic k. Returns (j, k, s0, s1)
    with j = −1 for a uniform topic; the caller reads the member's topic."""
    u, s0, s1 = xo_double(s0, s1)
    if u * (n + k_alpha) < n:
        return min(int(u * (n + k_alpha)), n - 1), 0, s0, s1
    u, s0, s1 = xo_double(s0, s1)
    return -1, min(int(u * n_topics), n_topics - 1), s0, s1


@njit(inline="always", cache=True)
def alias_draw(prob, alt, w, s0, s1):
    """A topic from word w's Vose table (prob float64[V,K], alt int32[V,K]) with two uniforms: (k, s0, s1)."""
    n_topics = prob.shape[1]
    u, s0, s1 = xo_double(s0, s1)
    slot = min(int(u * n_topics), n_topics - 1)
    u, s0, s1 = xo_double(s0, s1)
    return (slot if u < prob[w, slot] else alt[w, slot]), s0, s1


@njit(inline="always", cache=True)
def move_weights(k, kp, ndk, ckw, ck, entry_words, entry_vals, m):
    """A token (or a sentence) moves from topic k to kp: one document count and its privatised weights (the m
    entries entry_words/entry_vals) go along."""
    ndk[k] -= 1
    ndk[kp] += 1
    for e in range(m):
        ckw[k, entry_words[e]] -= entry_vals[e]
        ckw[kp, entry_words[e]] += entry_vals[e]
        ck[k] -= entry_vals[e]
        ck[kp] += entry_vals[e]


@njit(cache=True, nogil=True, parallel=True)
def build_dense_alias(ckw, ck, beta, vbeta, prob, alt, weight):
    """Word-proposal tables from privatised weights ckw float64[K,V], ck float64[K]: for each word w, Vose
    tables (prob float64[V,K], alt int32[V,K]) of weight[w,k] = (C_kw + β)/(C_k + Vβ) (weight also filled)."""
    n_topics, n_words = ckw.shape
    for w in prange(n_words):
        small = np.empty(n_topics, dtype=np.int64)
        large = np.empty(n_topics, dtype=np.int64)
        a = np.empty(n_topics, dtype=np.int64)
        for k in range(n_topics):
            weight[w, k] = (ckw[k, w] + beta) / (ck[k] + vbeta)
        _vose(weight[w], prob[w], a, small, large)
        for k in range(n_topics):
            alt[w, k] = a[k]


@njit(cache=True, nogil=True)
def accumulate_ckw(words, doc_ptr, z, key, n_words, epsilon, tau, ckw, buf_w, buf_v):
    """C^KW from scratch: the privatised vectors of every token added to its topic's row (ckw zeroed first)."""
    ckw[:] = 0.0
    for i in range(words.shape[0]):
        m = privatized_vector(key, i, words[i], n_words, epsilon, tau, buf_w, buf_v)
        if m < 0:
            raise ValueError("privatised vector larger than its buffer")
        k = z[i]
        for e in range(m):
            ckw[k, buf_w[e]] += buf_v[e]


@njit(cache=True, nogil=True)
def mh_sweep(words, doc_ptr, z, n_dk, ckw, ck, log_phi, alpha, key, n_words, epsilon, tau,
             prob, alt, weight, buf_w, buf_v, rng, stream):
    """One private MH sweep in place (z, n_dk, ckw, ck updated); returns the number of accepted moves.

    doc_proposal, _loglik, move_weights, alias_draw and _argmax_word (which SentenceLDA's sweep calls) are
    written out in the loop with the same arithmetic and draws: numba reference-counts the arrays handed to a
    helper that branches (an atomic call each). In document order a token's [K, V] columns are at random places;
    at ε = ∞ the driver runs the same chain word by word instead (``_mh_private_exact``).
    """
    n_topics = n_dk.shape[1]
    k_alpha = n_topics * alpha
    s0, s1 = rng[stream, 0], rng[stream, 1]
    accepted = 0
    for d in range(doc_ptr.shape[0] - 1):
        start, stop = doc_ptr[d], doc_ptr[d + 1]
        n_d = stop - start
        for i in range(start, stop):
            m = privatized_vector(key, i, words[i], n_words, epsilon, tau, buf_w, buf_v)
            if m < 0:
                raise ValueError("privatised vector larger than its buffer")
            k = z[i]
            ll_k = 0.0
            for e in range(m):
                ll_k += buf_v[e] * log_phi[k, buf_w[e]]
            # phase 0: doc proposal (Eq. 17, as doc_proposal), acceptance Eq. 19; phase 1: word proposal (Eq. 20)
            # from the sweep's tables (as _argmax_word, alias_draw), acceptance Eq. 22
            for phase in range(2):
                if phase == 0:
                    u, s0, s1 = xo_double(s0, s1)
                    if u * (n_d + k_alpha) < n_d:
                        kp = z[start + min(int(u * (n_d + k_alpha)), n_d - 1)]
                    else:
                        u, s0, s1 = xo_double(s0, s1)
                        kp = min(int(u * n_topics), n_topics - 1)
                else:
                    if m == 0:  # every entry fell below τ: the token carries no word, only its document's topics
                        break
                    best, wp = -1e300, buf_w[0]
                    for e in range(m):
                        if buf_v[e] > best:
                            best, wp = buf_v[e], buf_w[e]
                    u, s0, s1 = xo_double(s0, s1)
                    slot = min(int(u * n_topics), n_topics - 1)
                    u, s0, s1 = xo_double(s0, s1)
                    kp = slot if u < prob[wp, slot] else alt[wp, slot]
                if kp == k:
                    continue
                ll_p = 0.0
                for e in range(m):
                    ll_p += buf_v[e] * log_phi[kp, buf_w[e]]
                if phase == 0:
                    # π(k′)q(k|k′)/(π(k)q(k′|k)): the reverse move's proposal counts the token at k′, so
                    # q(k|k′) ∝ Ĉ_k + α and q(k′|k) ∝ Ĉ_k′ + α, and the doc-topic factors cancel
                    log_a = ll_p - ll_k
                else:
                    log_a = (math.log(n_dk[d, kp] + alpha) - math.log(n_dk[d, k] - 1 + alpha) + ll_p - ll_k
                             + math.log(weight[wp, k]) - math.log(weight[wp, kp]))
                u, s0, s1 = xo_double(s0, s1)
                if log_a >= 0.0 or u < math.exp(log_a):
                    n_dk[d, k] -= 1
                    n_dk[d, kp] += 1
                    for e in range(m):
                        ckw[k, buf_w[e]] -= buf_v[e]
                        ckw[kp, buf_w[e]] += buf_v[e]
                        ck[k] -= buf_v[e]
                        ck[kp] += buf_v[e]
                    z[i] = kp
                    k, ll_k = kp, ll_p
                    accepted += 1
    rng[stream, 0], rng[stream, 1] = s0, s1
    return accepted


@njit(cache=True, nogil=True)
def reassign_from_model(words, z, key, n_words, epsilon, tau, prob, alt, buf_w, buf_v, rng, stream):
    """Alg. 1 lines 9–10: every token's topic drawn from the word-topic alias tables of the new local model
    (for the word whose privatised value is largest)."""
    s0, s1 = rng[stream, 0], rng[stream, 1]
    for i in range(words.shape[0]):
        m = privatized_vector(key, i, words[i], n_words, epsilon, tau, buf_w, buf_v)
        if m < 0:
            raise ValueError("privatised vector larger than its buffer")
        if m == 0:
            continue
        z[i], s0, s1 = alias_draw(prob, alt, _argmax_word(buf_w, buf_v, m), s0, s1)
    rng[stream, 0], rng[stream, 1] = s0, s1
