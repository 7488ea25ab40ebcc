"""iFTM's private MH sweep for LDA at ε = ∞ (no privatisation), word by word (Jiang et al., Alg. 1 l. 11–21).

The chain is ``_mh_private.mh_sweep``'s: per token a document proposal (Eq. 17, accepted with Eq. 19 as
corrected there: φ_k′w / φ_kw) then a word proposal (Eq. 20, from the Vose tables built from C^KW when the
sweep started; accepted with Eq. 22), Φ fixed for the sweep. Only the memory order differs. At ε = ∞ a token's
privatised vector is its word with weight 1, so everything a token reads of the [K, V] and [V, K] arrays
(φ's and C^KW's column w, w's tables) belongs to its word. Visiting the tokens word by word (any fixed scan
order is a valid sweep: given Φ, the documents are independent and a document's tokens are updated one at a
time) keeps those in cache for the word's whole run, and the neighbouring words share their cache lines.
What is left at random places is the token's document: its row of C^DK and the topic of the token the document
proposal picks. Both proposals' randomness is independent of the state (the word proposal's table is fixed),
so it is drawn ``_AHEAD`` tokens early from a counter-based stream and those reads are prefetched then, as in
``_cycle_mh``.

Uniforms: proposals from the counter stream (SplitMix64's output at key + c·γ, c = 2·scan position +
{0 document, 1 word}), one uniform each (``doc_pick``; a Vose slot and its coin from one uniform); the key and
the acceptance coins, in the order of the moves, from the stream's xoroshiro state
(``reference.reference_private_exact_sweep`` consumes the same). The acceptance tests are ratios of products
with no exp or log, evaluated as that reference writes them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedtopic.models._cycle_mh import counter_uniform, doc_pick
from fedtopic.models._prefetch import prefetch
from fedtopic.models.normal import xo_double, xo_next

_AHEAD = 16  # proposals drawn and their reads prefetched this many tokens ahead (a power of two)


@njit(cache=True, nogil=True, error_model="numpy")
def mh_sweep_exact(doc_ptr, word_ptr, order, doc_of, z, n_dk, ckw, ck, phi, alpha, prob, alt, weight, rng, stream):
    """One private MH sweep at ε = ∞ in place (z, n_dk, ckw, ck updated); returns the number of accepted moves.

    doc_ptr int64[D+1]; word_ptr / order / doc_of: ``_cycle_mh.scan_order`` of the whole corpus; z int32[N];
    n_dk int32[D,K]; ckw float64[K,V] (C^KW, integer-valued here), ck float64[K]; phi float64[K,V] (this
    sweep's Φ); prob float64[V,K], alt int32[V,K], weight float64[V,K]: ``build_dense_alias`` of C^KW.
    """
    n_topics = n_dk.shape[1]
    n_scan = order.shape[0]
    ra = rng[stream, 0]
    rb = rng[stream, 1]
    key, ra, rb = xo_next(ra, rb)
    ndk_flat = n_dk.reshape(n_dk.shape[0] * n_topics)  # for the prefetch, which takes 1-d arrays
    doc_props = np.empty(_AHEAD, dtype=np.int64)  # ring: a token position of d, or −1 − topic (the Kα part)
    word_props = np.empty(_AHEAD, dtype=np.int64)  # ring: the word proposal's topic
    accepted = 0
    w = -1  # word of the visited token
    w_fill = 0  # word of the token whose proposals are drawn
    for jj in range(min(_AHEAD, n_scan)):
        prefetch(z, order[jj])
    for jj in range(n_scan + _AHEAD):
        j = jj - _AHEAD
        if j >= 0:  # visit scan token j
            while word_ptr[w + 1] <= j:
                w += 1
            i = order[j]
            d = doc_of[j]
            s = np.int64(z[i])
            slot = j & (_AHEAD - 1)
            for phase in range(2):
                if phase == 0:  # document proposal (token i counts at s); the doc factors cancel
                    dp = doc_props[slot]
                    t = -1 - dp if dp < 0 else np.int64(z[dp])
                    if t == s:
                        continue
                    u, ra, rb = xo_double(ra, rb)
                    if not u * phi[s, w] < phi[t, w]:
                        continue
                else:  # word proposal q(t) = weight[w, t] / Σ weight[w]: an independence proposal
                    t = word_props[slot]
                    if t == s:
                        continue
                    u, ra, rb = xo_double(ra, rb)
                    if not (u * ((n_dk[d, s] - 1 + alpha) * phi[s, w] * weight[w, t])
                            < (n_dk[d, t] + alpha) * phi[t, w] * weight[w, s]):
                        continue
                n_dk[d, s] -= 1
                n_dk[d, t] += 1
                ckw[s, w] -= 1.0
                ckw[t, w] += 1.0
                ck[s] -= 1.0
                ck[t] += 1.0
                z[i] = t
                s = t
                accepted += 1
        if jj < n_scan:  # draw scan token jj's proposals into the slot just freed; prefetch what they read
            while word_ptr[w_fill + 1] <= jj:
                w_fill += 1
            d = doc_of[jj]
            row = np.int64(d) * n_topics
            base = doc_ptr[d]
            slot = jj & (_AHEAD - 1)
            dp = doc_pick(counter_uniform(key, 2 * jj), base, doc_ptr[d + 1] - base, n_topics, alpha)
            doc_props[slot] = dp
            if dp >= 0:
                prefetch(z, dp)
            x = counter_uniform(key, 2 * jj + 1) * n_topics
            e = min(np.int64(x), n_topics - 1)
            t = e if x - e < prob[w_fill, e] else np.int64(alt[w_fill, e])
            word_props[slot] = t
            prefetch(ndk_flat, row + t)
            prefetch(ndk_flat, row + z[order[jj]])  # its own topic: no other visit changes it; fetched below
            if jj + _AHEAD < n_scan:
                prefetch(z, order[jj + _AHEAD])
    rng[stream, 0] = ra
    rng[stream, 1] = rb
    return accepted
