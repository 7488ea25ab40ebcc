"""The "mh" sampler: exact Metropolis–Hastings, O(min(k_d, bound)) per token whatever K.

Target for token i (word w, document d, current topic s), every count without token i
(paper Eq. 10):

    π(k) ∝ (n_dk + α) · (N_wk + β) / (N_k + Vβ),     N_wk = n_wk (this shard's tokens) + F_wk (the rest)

A token takes one of two moves, chosen by k_d, the number of topics its document's *other*
tokens hold (a function of the other tokens only, so each move leaves π invariant given the
choice, as the dense fallback of _mh.py):

**Exact-document move** (k_d ≤ ``exact_below``; AliasLDA's split, Li et al. KDD 2014, with a
word part that reads the current state). One MH step with the independence proposal

    q(k) ∝ n_dk φ_k + α c g(k),   φ_k = (N_wk + β)/(N_k + Vβ),   g(k) = n_wk + δ_ks + F_wk + β,

whose document part is π's exactly (O(k_d): the document's topic list and counts, kept as
tokens move) and whose word part is the word proposal below scaled by the constant
c = K / (N − 1 + KVβ) = 1 / mean_k(N_k + Vβ) (Σ_k N_k = N − 1 without the token: a constant of
the sweep). q depends on the other tokens only (the δ_ks term proposes s itself, a null move),
so accepting t with min(1, π(t) q(s) / (π(s) q(t))) leaves π invariant, and acceptance is near 1
where the document part dominates: the step mixes about as a Gibbs draw. The choice of c
(φ's denominator averaged) is ours; AliasLDA takes the word part from stale alias tables,
which a whole-sweep test rejects (below).

**Cycles** (a document with more topics: long documents early in the chain). The two
proposals of LightLDA (Yuan et al., WWW 2015, §3) in the form WarpLDA draws them (Chen et
al., VLDB 2016, §4: the topic of a random token), ``mh_steps`` cycles of two moves, each O(1)
and leaving π invariant:

* **word proposal** q(t | s) ∝ n_wt + δ_ts + F_wt + β: the topic of a uniformly chosen token
  of w (token i counts, at s; with threads, another shard's token at its topic when the sweep
  began, which is what this shard's totals hold of it), or a draw from F_w (an alias table of
  the frozen counts of other parties, fixed during the sweep), or a uniform topic. Accept t with
  min(1, π(t) g(s) / (π(s) g(t))), g(k) = n_wk + F_wk + β. The shard's totals are its own
  tokens plus F, so g(k) = N_wk + β is read from the totals' row of w (no count of the run is
  kept) and the ratio is (n_dt + α)(N_s + Vβ) / ((n_ds + α)(N_t + Vβ)).
* **document proposal** q(t | s) ∝ n_dt + δ_ts + α: the topic of a uniformly chosen token of d
  (token i counts, at s) or, with mass Kα, a uniform topic. Its ratio cancels π's document
  factor: accept with min(1, (N_wt + β)(N_s + Vβ) / ((N_ws + β)(N_t + Vβ))).

Every proposal reads the *current* state only (no table frozen at the start of the sweep):
alias tables of stale totals, as AliasLDA and LightLDA use, make each step exact given
the tables but the sweep not, since the tables remember where tokens visited earlier in
the sweep were; a whole-sweep chi-square on a 6-token corpus rejects that (p ≈ 1e-7) and
accepts this kernel, with either move or both (tests/test_models_cycle_mh.py).

Memory order (the point of the kernel: every token reads the document row of a random
document). Tokens are visited word by word (any fixed scan order is a valid Gibbs sweep),
so the word's rows and the topics of its tokens (z_w, kept in scan order) stay in cache
and the word proposal reads them there, as φ (kept for the visited word) is. The proposals'
randomness does not depend on the state, so it is drawn ``_AHEAD`` tokens early from a
counter-based stream (SplitMix64's output at key + c·γ, c = 2·mh_steps·scan position +
2·cycle + {0 word, 1 document}) and the document-row entries, z entries and topic lists the
visit will read are prefetched then. For a
token whose document is below the bound then, only the first word proposal is drawn ahead
(the exact move reads no other); should the document have crossed it by the visit, the rest
are drawn then from the same counters.

Uniforms: proposals from the counter stream; the shard's own stream gives the key (its
first draw), the exact move's part choice and the acceptance coins, in the order of the moves
(reference.reference_cycle_sweep consumes the same). No fastmath: the acceptance tests
evaluate exactly as the numpy reference writes them.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, uint64

from fedtopic.models._mh import _word_major, first_above
from fedtopic.models._prefetch import prefetch
from fedtopic.models.normal import xo_double, xo_next
from fedtopic.models.rng import _INV_2_53, GOLDEN, splitmix_output

_AHEAD = 16  # proposals drawn and their reads prefetched this many tokens ahead (a power of two)


@njit(inline="always", cache=True)
def counter_uniform(key, c):
    """Uniform in [0, 1) number c of the counter stream with this key."""
    return float(splitmix_output(key + uint64(c) * uint64(GOLDEN)) >> uint64(11)) * _INV_2_53


@njit(inline="always", cache=True)
def word_pick(u01, run_lo, run_len, f_mass, f_lo, f_hi, n_topics, beta):
    """Word proposal for the uniform u01: (0, scan position) a token of the run, (1, slot, coin) the F alias, or
    (2, topic) a uniform one — as (kind, index, coin). Scalars only: numba reference-counts arrays passed to a
    helper that branches (~40 ns a call here), so callers read the tables themselves."""
    u = u01 * (run_len + f_mass + n_topics * beta)
    if u < run_len:
        return 0, run_lo + min(np.int64(u), run_len - 1), 0.0
    u -= run_len
    if u < f_mass:
        n = f_hi - f_lo
        x = (u / f_mass) * n
        e = min(np.int64(x), n - 1)
        return 1, f_lo + e, x - e
    return 2, min(np.int64((u - f_mass) / beta), n_topics - 1), 0.0


@njit(inline="always", cache=True)
def doc_pick(u01, base, length, n_topics, alpha):
    """Document proposal for the uniform u01: a token position (≥ 0) or −1 − topic (the Kα part)."""
    u = u01 * (length + n_topics * alpha)
    if u < length:
        return base + min(np.int64(u), length - 1)
    return -1 - min(np.int64((u - length) / alpha), n_topics - 1)


@njit(inline="always", cache=True)
def proposed_topic(code, own, s, topic_there):
    """The topic a proposal code names: −1 − code for a drawn topic, else the topic of the token at position
    code (topic_there, read by the caller), which is s when that token is the one being sampled (own)."""
    if code < 0:
        return -1 - code
    return s if code == own else np.int64(topic_there)


@njit(cache=True, nogil=True)
def scan_order(words, doc_ptr, d0, d1):
    """(word_ptr int64[V+1], order int64[n], doc_of int32[n]) of documents d0..d1-1's n tokens in word-major order:
    the tokens of word w are order[word_ptr[w]:word_ptr[w+1]] (corpus order within a word), doc_of their documents.
    V is max(words) + 1 over the whole corpus."""
    lo = doc_ptr[d0]
    n_scan = doc_ptr[d1] - lo
    n_words = 0
    for i in range(words.shape[0]):
        n_words = max(n_words, words[i] + 1)
    word_ptr, order = _word_major(words, lo, lo + n_scan, n_words)
    doc_corpus = np.empty(n_scan, dtype=np.int32)
    for d in range(d0, d1):
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            doc_corpus[i - lo] = d
    doc_of = np.empty(n_scan, dtype=np.int32)
    for j in range(n_scan):
        doc_of[j] = doc_corpus[order[j] - lo]
    return word_ptr, order, doc_of


@njit(cache=True, nogil=True)
def scan_topics(z, order):
    """int32[N]: z in scan order (z[order])."""
    z_w = np.empty(order.shape[0], dtype=np.int32)
    for j in range(order.shape[0]):
        z_w[j] = z[order[j]]
    return z_w


@njit(cache=True, nogil=True)
def shard_visits(word_ptr, order, lo, hi):
    """(visit int64[n], own_lo int64[V], own_hi int64[V]): the scan positions of corpus tokens lo..hi-1, and of
    each word's run the part they hold (contiguous: a run keeps corpus order)."""
    n_words = word_ptr.shape[0] - 1
    own_lo = np.empty(n_words, dtype=np.int64)
    own_hi = np.empty(n_words, dtype=np.int64)
    visit = np.empty(hi - lo, dtype=np.int64)
    n = 0
    for w in range(n_words):
        a = word_ptr[w]
        while a < word_ptr[w + 1] and order[a] < lo:
            a += 1
        b = a
        while b < word_ptr[w + 1] and order[b] < hi:
            visit[n] = b
            n += 1
            b += 1
        own_lo[w] = a
        own_hi[w] = b
    return visit, own_lo, own_hi


@njit(cache=True, nogil=True)
def gather_visits(z, order, visit, z_w, z_snap):
    """z_w[p] = z_snap[p] = z[order[p]] for the scan positions p in visit (one thread shard's part of
    scan_topics, run in the shard's thread before any shard samples)."""
    for v in range(visit.shape[0]):
        p = visit[v]
        k = z[order[p]]
        z_w[p] = k
        z_snap[p] = k


@njit(cache=True, nogil=True, parallel=True)
def apply_moves(word_ptr, z_snap, z_w, tot_wk):
    """Add the sweep's moves (z_w against z_snap, in scan order) to tot_wk int32[V,K], the words' rows in
    parallel (each row is one word's: no two threads write one). The topic totals come from the shards' own."""
    for w in prange(word_ptr.shape[0] - 1):
        for j in range(word_ptr[w], word_ptr[w + 1]):
            if z_snap[j] != z_w[j]:
                tot_wk[w, z_snap[j]] -= 1
                tot_wk[w, z_w[j]] += 1


@njit(cache=True, nogil=True, error_model="numpy")
def cycle_shard(
    doc_ptr, d0, d1, word_ptr, order, doc_of, visit, own_lo, own_hi, z_w, z_snap, z, n_dk, tot_wk, tot_k, row_buf,
    has_other, f_ptr, f_top, f_prob, f_alt, f_mass, alpha, beta, vbeta, mh_steps, exact_below, rng, stream,
):
    """One sweep over the tokens of documents d0..d1-1 in place (shapes as in _dense.dense_shard).

    word_ptr / order / doc_of: scan_order of the whole corpus; z_w int32[N]: the topics in scan order (kept
    with z). A shard of several visits the scan positions visit int64[n] (increasing; ignored when the shard is
    the whole corpus), its tokens of word w being positions own_lo[w]..own_hi[w]-1 of w's run; a word proposal
    may pick any token of the run, reading the topic of another shard's token from z_snap (z_w at the start of
    the sweep, which the other shard's moves do not touch).

    tot_wk int32[V,K]: the totals, updated in place when row_buf is empty (one shard); with threads they are
    read only, each word's row copied into row_buf int32[K] when its run starts (the shard's tokens of w have
    not moved yet: the row is F plus the shard's own tokens), and the caller adds up the moves from z_w against
    z_snap. tot_k int64[K]: the shard's totals (updated). has_other: frozen counts F of other parties are part of
    the totals; f_* are their alias tables from _alias.build_word_alias (weights F_wk, f_mass[w] = Σ_k F_wk),
    placeholders otherwise. A token whose document's other tokens hold at most exact_below topics takes the
    exact-document move, any other token mh_steps cycles. The loop is written out flat on purpose (see word_pick).
    """
    n_topics = tot_wk.shape[1]
    lo = doc_ptr[d0]
    n_scan = doc_ptr[d1] - lo  # this shard's tokens, visited at scan positions visit[v] (v itself: every token)
    subset = n_scan != order.shape[0]
    live = row_buf.shape[0] == 0
    # the visited word's counts row at rows[off:off + K]: tot_wk's own (live) or a private copy of it. One flat
    # array chosen once (an array variable reassigned per word costs numba reference counting in the loop)
    rows = tot_wk.reshape(tot_wk.shape[0] * n_topics) if live else row_buf
    off = 0
    mine_lo = mine_hi = 0
    inv = np.empty(n_topics, dtype=np.float64)
    n_tot = 0
    for k in range(n_topics):
        inv[k] = 1.0 / (tot_k[k] + vbeta)
        n_tot += tot_k[k]
    c_word = n_topics / ((n_tot - 1) + n_topics * vbeta)  # c: 1 / mean(N_k + Vβ) without the token, a constant
    ra = rng[stream, 0]
    rb = rng[stream, 1]
    key, ra, rb = xo_next(ra, rb)
    ndk_flat = n_dk.reshape(n_dk.shape[0] * n_topics)  # for the prefetch, which takes 1-d arrays
    # each document's topics (dtop) and, while it has at most exact_below, their counts (dcnt), at doc_ptr[d] - lo
    # (a document has at most as many topics as tokens); n_top[d - d0] of them. Built from z in order of first
    # appearance, O(tokens) (reading n_dk's rows would cost O(D·K) a sweep: 200 MB at 50,000 documents, K = 1000)
    dtop = np.empty(n_scan, dtype=np.int32)
    dcnt = np.empty(n_scan, dtype=np.int32)
    n_top = np.zeros(d1 - d0, dtype=np.int64)
    seen_in = np.full(n_topics, -1, dtype=np.int64)  # the last document topic k was listed for ...
    seen_at = np.empty(n_topics, dtype=np.int64)  # ... and its place in that list
    for d in range(d0, d1):
        base = doc_ptr[d] - lo
        n = 0
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            k = z[i]
            if seen_in[k] != d:
                seen_in[k] = d
                seen_at[k] = n
                dtop[base + n] = k
                dcnt[base + n] = 1
                n += 1
            else:
                dcnt[base + seen_at[k]] += 1
        n_top[d - d0] = n
    phi = np.empty(n_topics, dtype=np.float64)  # (N_wk + β) / (N_k + Vβ) of the visited word w
    cum = np.empty(min(exact_below, n_topics) + 1, dtype=np.float64)
    word_props = np.empty((_AHEAD, mh_steps), dtype=np.int64)  # ring of the next _AHEAD tokens' proposals
    doc_props = np.empty((_AHEAD, mh_steps), dtype=np.int64)
    all_drawn = np.zeros(_AHEAD, dtype=np.bool_)  # False: only word_props[slot, 0] was drawn ahead
    w = -1  # word of the visited token
    w_fill = 0  # word of the token whose proposals are drawn
    for vv in range(n_scan + _AHEAD):
        v = vv - _AHEAD
        if v >= 0:  # visit the shard's token v, at scan position j
            j = visit[v] if subset else v
            if word_ptr[w + 1] <= j:  # a new word: its row and φ
                while word_ptr[w + 1] <= j:
                    w += 1
                mine_lo = own_lo[w]  # this shard's part of w's run
                mine_hi = own_hi[w]
                if live:
                    off = w * n_topics
                    for k in range(n_topics):
                        phi[k] = (rows[off + k] + beta) * inv[k]
                else:
                    for k in range(n_topics):
                        c = tot_wk[w, k]
                        row_buf[k] = c
                        phi[k] = (c + beta) * inv[k]
            i = order[j]
            d = doc_of[j]
            s = np.int64(z_w[j])
            n_dk[d, s] -= 1
            rows[off + s] -= 1
            tot_k[s] -= 1
            inv[s] = 1.0 / (tot_k[s] + vbeta)
            phi[s] = (rows[off + s] + beta) * inv[s]
            slot = v & (_AHEAD - 1)
            base = doc_ptr[d] - lo
            n_t = n_top[d - d0]
            e_s = -1  # the list slot of s, where known
            if n_dk[d, s] == 0 or n_t <= exact_below:
                e = 0
                while dtop[base + e] != s:
                    e += 1
                if n_dk[d, s] == 0:  # s left the document: swap it out of the list
                    n_t -= 1
                    dtop[base + e] = dtop[base + n_t]
                    dcnt[base + e] = dcnt[base + n_t]
                    if n_t == exact_below:  # the counts are kept from here on: fill them in
                        for e in range(n_t):
                            dcnt[base + e] = n_dk[d, dtop[base + e]]
                else:
                    dcnt[base + e] -= 1
                    e_s = e
            if n_t <= exact_below:  # exact-document move
                p_doc = 0.0
                for e in range(n_t):
                    p_doc += dcnt[base + e] * phi[dtop[base + e]]
                    cum[e] = p_doc
                run_len = word_ptr[w + 1] - word_ptr[w]
                a_word = alpha * c_word * (run_len + (f_mass[w] if has_other else 0.0) + n_topics * beta)
                u, ra, rb = xo_double(ra, rb)
                u *= p_doc + a_word
                if u < p_doc:  # document part: the list slot by binary search in the running sums
                    a = first_above(cum, n_t, u)
                    t = np.int64(dtop[base + a])
                    nd_t = np.int64(dcnt[base + a])
                else:  # word part: the word proposal drawn ahead
                    wp = word_props[slot, 0]
                    p = max(wp, 0)
                    t = proposed_topic(wp, j, s, z_w[p] if mine_lo <= p < mine_hi else z_snap[p])
                    a = -1
                    nd_t = np.int64(n_dk[d, t])
                if t != s:
                    nd_s = n_dk[d, s]
                    g_t = rows[off + t] + beta
                    g_s = rows[off + s] + beta
                    q_t = nd_t * phi[t] + alpha * c_word * g_t
                    q_s = nd_s * phi[s] + alpha * c_word * g_s
                    u, ra, rb = xo_double(ra, rb)
                    if u * ((nd_s + alpha) * phi[s] * q_t) < (nd_t + alpha) * phi[t] * q_s:
                        s = t
                        e_s = a
            else:  # mh_steps (word, document) cycles
                if not all_drawn[slot]:  # drawn now, the same counters: the document thinned out ahead of it
                    run_lo = word_ptr[w]
                    run_len = word_ptr[w + 1] - run_lo
                    for r in range(mh_steps):
                        if r > 0:
                            kind, e, coin = word_pick(
                                counter_uniform(key, 2 * mh_steps * j + 2 * r), run_lo, run_len,
                                f_mass[w] if has_other else 0.0, f_ptr[w] if has_other else 0,
                                f_ptr[w + 1] if has_other else 0, n_topics, beta)
                            if kind == 1:
                                e = np.int64(f_top[e]) if coin < f_prob[e] else np.int64(f_alt[e])
                            word_props[slot, r] = e if kind == 0 else -1 - e
                        doc_props[slot, r] = doc_pick(counter_uniform(key, 2 * mh_steps * j + 2 * r + 1),
                                                      doc_ptr[d], doc_ptr[d + 1] - doc_ptr[d], n_topics, alpha)
                for r in range(mh_steps):
                    wp = word_props[slot, r]  # a scan position of w's run (token j counts at s) or −1 − topic
                    p = max(wp, 0)
                    t = proposed_topic(wp, j, s, z_w[p] if mine_lo <= p < mine_hi else z_snap[p])
                    if t != s:
                        g_t = rows[off + t] + beta
                        g_s = rows[off + s] + beta
                        p_t = (n_dk[d, t] + alpha) * ((rows[off + t] + beta) * inv[t])
                        p_s = (n_dk[d, s] + alpha) * ((rows[off + s] + beta) * inv[s])
                        u, ra, rb = xo_double(ra, rb)
                        if u * (p_s * g_t) < p_t * g_s:
                            s = t
                    dp = doc_props[slot, r]  # a token of d (token i counts at s) or, as −1 − topic, the Kα part
                    t = proposed_topic(dp, i, s, z[max(dp, 0)])
                    if t != s:
                        u, ra, rb = xo_double(ra, rb)
                        if u * ((rows[off + s] + beta) * inv[s]) < (rows[off + t] + beta) * inv[t]:
                            s = t
            z_w[j] = s
            z[i] = s
            if n_dk[d, s] == 0:
                dtop[base + n_t] = s
                dcnt[base + n_t] = 1
                n_t += 1
            elif n_t <= exact_below:
                if e_s < 0:
                    e_s = 0
                    while dtop[base + e_s] != s:
                        e_s += 1
                dcnt[base + e_s] += 1
            n_top[d - d0] = n_t
            n_dk[d, s] += 1
            rows[off + s] += 1
            tot_k[s] += 1
            inv[s] = 1.0 / (tot_k[s] + vbeta)
            phi[s] = (rows[off + s] + beta) * inv[s]
        if vv < n_scan:  # draw token vv's proposals into the slot just freed; prefetch what they read
            jj = visit[vv] if subset else vv
            while word_ptr[w_fill + 1] <= jj:
                w_fill += 1
            d = doc_of[jj]
            row_at = np.int64(d) * n_topics
            base = doc_ptr[d]
            length = doc_ptr[d + 1] - base
            run_lo = word_ptr[w_fill]
            run_len = word_ptr[w_fill + 1] - run_lo
            f_mass_w = f_mass[w_fill] if has_other else 0.0
            f_lo = f_ptr[w_fill] if has_other else 0
            f_hi = f_ptr[w_fill + 1] if has_other else 0
            slot = vv & (_AHEAD - 1)
            c = 2 * mh_steps * jj
            prefetch(ndk_flat, row_at + z_w[jj])
            exact_ahead = n_top[d - d0] <= exact_below + 1  # (the token itself may leave the count)
            if exact_ahead:
                for e in range(0, n_top[d - d0], 16):
                    prefetch(dtop, base - lo + e)
                    prefetch(dcnt, base - lo + e)
            all_drawn[slot] = not exact_ahead
            for r in range(1 if exact_ahead else mh_steps):
                kind, e, coin = word_pick(counter_uniform(key, c + 2 * r), run_lo, run_len, f_mass_w, f_lo, f_hi,
                                          n_topics, beta)
                if kind == 0:
                    word_props[slot, r] = e
                    prefetch(ndk_flat, row_at + z_snap[e])  # a hint: that token may move before the visit
                else:
                    t = e if kind == 2 else (np.int64(f_top[e]) if coin < f_prob[e] else np.int64(f_alt[e]))
                    word_props[slot, r] = -1 - t
                    prefetch(ndk_flat, row_at + t)
                if not exact_ahead:
                    dp = doc_pick(counter_uniform(key, c + 2 * r + 1), base, length, n_topics, alpha)
                    doc_props[slot, r] = dp
                    if dp >= 0:
                        prefetch(z, dp)
    rng[stream, 0] = ra
    rng[stream, 1] = rb
