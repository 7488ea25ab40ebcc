"""iFTM's private Metropolis–Hastings for SentenceLDA (Jiang et al., Alg. 2; Eqs. 13–16, 23–28) as numba kernels.

In SentenceLDA (Balikas et al. 2016) all words of a sentence share one topic z_ds, and C^DK counts sentences.
Partially collapsed as for LDA: θ integrated out, Φ explicit (the driver redraws it from Dir(C^KW + β) after
each local iteration, Eq. 14). The target for sentence s of document d is Eq. 13 with Eq. 15's likelihood over
the privatised vectors of its tokens (Eq. 16):

    π(k) ∝ (Ĉ^DK_dk + α) · exp(Σ_{i∈s} Σ_w′ n̂_dsiw′ log φ_kw′)

(Ĉ excludes the sentence). The double sum is linear in n̂, so it is computed over the sentence's *summed*
privatised vector (``sentence_vector``): one pass over its distinct words per evaluation.

Moves, our reading of Alg. 2 (whose lines 15–19 draw per-word topics, which SentenceLDA does not have): every
proposal is for the sentence's one topic, and each is accepted with the standard MH ratio
π(k′)q(k|k′)/(π(k)q(k′|k)) (Eqs. 24 and 26 print the proposal ratio upside down, as Eqs. 18 and 21 do):

* first the doc proposal (Eq. 23), q_d(k) ∝ C^DK_dk + α with the sentence counted, drawn in O(1) as the topic
  of a uniformly chosen sentence of d with probability S_d/(S_d + Kα), else a uniform topic; as for LDA the
  doc-topic factors cancel and the ratio is the likelihood ratio;
* then, for each word of the sentence in turn (Alg. 2 l. 17–19), the word proposal (Eq. 25) from the sweep's
  alias table of the word whose privatised value is largest in that token's n̂ (a function of n̂ only, so the
  sampler never reads a raw word), accepted by Eq. 28's ratio with Ĉ for the sentence:
  (Ĉ_dk′ + α)/(Ĉ_dk + α) · L(k′)/L(k) · q_w(k)/q_w(k′).

C^KW holds the summed privatised weights of the tokens assigned to each topic; a sentence that moves takes
its summed vector along. Every token's n̂ is regenerated from ``privatize`` when its sentence is visited.
"""

from __future__ import annotations

import math

from numba import njit

from fedtopic.models._mh_private import (
    _argmax_word,
    _loglik,
    alias_draw,
    doc_proposal,
    move_weights,
)
from fedtopic.models.normal import xo_double
from fedtopic.models.privatize import privatized_vector


@njit(cache=True, nogil=True)
def sentence_vector(words, a, b, key, n_words, epsilon, tau, buf_w, buf_v, acc, sw, sv, argmax):
    """The summed privatised vector of tokens a..b−1 as (sw[:m] int64 words, sv[:m] float64 weights), returns m;
    argmax[j] is token a+j's largest-valued word (−1 if its vector is empty). acc float64[V] is zero on entry
    and on exit (kept entries exceed τ ≥ 0, so a touched word's sum is positive)."""
    m = 0
    for i in range(a, b):
        mi = privatized_vector(key, i, words[i], n_words, epsilon, tau, buf_w, buf_v)
        if mi < 0:
            raise ValueError("privatised vector larger than its buffer")
        argmax[i - a] = _argmax_word(buf_w, buf_v, mi) if mi > 0 else -1
        for e in range(mi):
            w = buf_w[e]
            if acc[w] == 0.0:
                sw[m] = w
                m += 1
            acc[w] += buf_v[e]
    for j in range(m):
        sv[j] = acc[sw[j]]
        acc[sw[j]] = 0.0
    return m


@njit(cache=True, nogil=True)
def accumulate_ckw_sentences(words, sent_ptr, z, key, n_words, epsilon, tau, ckw, buf_w, buf_v, acc, sw, sv,
                             argmax):
    """C^KW from scratch, sentence by sentence (ckw zeroed first); z is read at each sentence's first token."""
    ckw[:] = 0.0
    for s in range(sent_ptr.shape[0] - 1):
        a, b = sent_ptr[s], sent_ptr[s + 1]
        m = sentence_vector(words, a, b, key, n_words, epsilon, tau, buf_w, buf_v, acc, sw, sv, argmax)
        k = z[a]
        for e in range(m):
            ckw[k, sw[e]] += sv[e]


@njit(cache=True, nogil=True)
def mh_sentence_sweep(words, doc_sent, sent_ptr, z, n_dk, ckw, ck, log_phi, alpha, key, n_words, epsilon, tau,
                      prob, alt, weight, buf_w, buf_v, acc, sw, sv, argmax, rng, stream):
    """One private MH sweep over every sentence in place (z, n_dk, ckw, ck updated; z constant within a
    sentence); doc_sent int64[D+1] are the documents' sentence ranges. Returns the number of accepted moves."""
    n_topics = n_dk.shape[1]
    k_alpha = n_topics * alpha
    s0, s1 = rng[stream, 0], rng[stream, 1]
    accepted = 0
    for d in range(doc_sent.shape[0] - 1):
        first, last = doc_sent[d], doc_sent[d + 1]
        n_s = last - first
        ndk = n_dk[d]
        for s in range(first, last):
            a, b = sent_ptr[s], sent_ptr[s + 1]
            m = sentence_vector(words, a, b, key, n_words, epsilon, tau, buf_w, buf_v, acc, sw, sv, argmax)
            k = z[a]
            ll_k = _loglik(log_phi[k], sw, sv, m)
            # doc proposal (Eq. 23): the likelihood ratio decides (the doc-topic factors cancel)
            j, kp, s0, s1 = doc_proposal(n_s, k_alpha, n_topics, s0, s1)
            if j >= 0:
                kp = z[sent_ptr[first + j]]
            if kp != k:
                ll_p = _loglik(log_phi[kp], sw, sv, m)
                u, s0, s1 = xo_double(s0, s1)
                if ll_p >= ll_k or u < math.exp(ll_p - ll_k):
                    move_weights(k, kp, ndk, ckw, ck, sw, sv, m)
                    k, ll_k = kp, ll_p
                    accepted += 1
            # one word proposal (Eq. 25) per word of the sentence, acceptance Eq. 28 (with the MH orientation)
            for j in range(b - a):
                wp = argmax[j]
                if wp < 0:
                    continue
                kp, s0, s1 = alias_draw(prob, alt, wp, s0, s1)
                if kp == k:
                    continue
                ll_p = _loglik(log_phi[kp], sw, sv, m)
                log_a = (math.log(ndk[kp] + alpha) - math.log(ndk[k] - 1 + alpha) + ll_p - ll_k
                         + math.log(weight[wp, k]) - math.log(weight[wp, kp]))
                u, s0, s1 = xo_double(s0, s1)
                if log_a >= 0.0 or u < math.exp(log_a):
                    move_weights(k, kp, ndk, ckw, ck, sw, sv, m)
                    k, ll_k = kp, ll_p
                    accepted += 1
            for i in range(a, b):
                z[i] = k
    rng[stream, 0], rng[stream, 1] = s0, s1
    return accepted


@njit(cache=True, nogil=True)
def reassign_sentences(words, sent_ptr, z, key, n_words, epsilon, tau, prob, alt, buf_w, buf_v, acc, sw, sv,
                       argmax, rng, stream):
    """Alg. 2 lines 9–10 for sentences: each sentence's topic drawn from the word-topic tables of the new local
    model for one of its tokens chosen uniformly (among those with a non-empty privatised vector)."""
    s0, s1 = rng[stream, 0], rng[stream, 1]
    for s in range(sent_ptr.shape[0] - 1):
        a, b = sent_ptr[s], sent_ptr[s + 1]
        sentence_vector(words, a, b, key, n_words, epsilon, tau, buf_w, buf_v, acc, sw, sv, argmax)
        usable = 0
        for j in range(b - a):
            if argmax[j] >= 0:
                argmax[usable] = argmax[j]
                usable += 1
        if usable == 0:
            continue
        u, s0, s1 = xo_double(s0, s1)
        k, s0, s1 = alias_draw(prob, alt, argmax[min(int(u * usable), usable - 1)], s0, s1)
        for i in range(a, b):
            z[i] = k
    rng[stream, 0], rng[stream, 1] = s0, s1
