"""Dense O(K) collapsed Gibbs kernel (paper Eq. 10) for one document shard.

For token i (word w, document d) with its own counts removed:

    p(z_i = k) ∝ (n_dk + α_k) · (N_wk + β) / (N_k + Vβ)                     (Eq. 10)

with α_k = α for the paper's symmetric prior or a learned asymmetric α (models.prior, models.hyperopt), where N are the *total* counts the caller hands in (this party's own counts
plus, in the federated case, a frozen matrix of everyone else's; see gibbs.py).
The Eq. 10 denominator Σ_s(n_ds + α) is the same for every k and is dropped.

Speed: counts are int32 rows read contiguously; 1/(N_k + Vβ) is cached in
``inv`` for every topic, and so is the document's factor q_k = (n_dk + α)/(N_k + Vβ)
(set for all K at each document's start), so a token's K products are
q_k·(N_wk + β): one conversion, add and multiply per topic, one SIMD loop. That
loop runs before the token's own counts are removed and before the previous
token's q entry is refreshed, and the two entries it read stale are patched after
it: a scalar store into q or the word row right before the loop read them as
vectors made the loop wait for the store. The tables 1/(N_k + 1 + Vβ) and
1/(N_k − 1 + Vβ) are kept beside ``inv``, so a token that leaves or joins topic k
reads its new entry instead of waiting for a division (``leave_topic``, ``join_topic``); the
same divisions of the same integers, so the same bits.

The draw ``t = u · Σp`` is the k with Σ_{j<k} p_j ≤ t < Σ_{j≤k} p_j, as
``searchsorted(cumsum(p), t, 'right')`` in reference.py, up to float rounding at
bucket edges; topics are searched in blocks of ``_B`` = 8. Where K ≤ ``RUNS_UP_TO``
(``runs_block``) nothing in the search branches on t: ``block_runs`` sums every
block as a fixed tree and keeps the running sums, the block is the count of running
sums ≤ t and the slot the count of partial sums inside it ≤ t (``locate_runs``). A
branch on t is mispredicted about twice a token, and each miss threw away the next
token's products, which do not depend on this token's draw: at K = 50 a token took
45–48 ns with the branching search and 32–36 ns without (K = 200: 69–73 against
63–65). Above K = 256 summing every block costs more than the misses, and
``scan_block`` keeps ``locate``: each block's sum taken only while t lies beyond it,
then the block's slots. Every regrouping of the arithmetic moves p_k and Σp by a few
ulps, which changes a draw only if t falls within those ulps of a bucket edge (about
1e-16 per token): the fingerprint tests (whole runs, bit-identical Φ) check that the
draws stay.

Indices (topics, word ids, search positions) are unsigned: numba then emits no
negative-index wraparound code, which in the search loops cost ~5 % of a K=50 sweep.
The kernel trusts z and words to be in range; states read from files pass
``state.check_state`` first.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedtopic.models._alpha_at import alpha_at
from fedtopic.models.rng import OWN_ROW, next_double, put_stream, take_stream

_B = 8  # topics per search block
RUNS_UP_TO = 256  # topics up to which _gibbs_block.dense_block draws by block_runs and locate_runs


@njit(inline="always", cache=True)
def dense_draw(ndk, nwk, inv, p, alpha, beta, u):
    """Topic drawn from Eq. 10 for one token (its counts removed) with the uniform u.

    ndk int32[K] document row, nwk int32[K] total word row, inv float64[K] = 1/(N_k + Vβ),
    p float64[⌈K/_B⌉·_B] scratch (zero past K, ``dense_scratch``).
    """
    total = 0.0
    for j in range(inv.shape[0]):
        v = (ndk[j] + alpha_at(alpha, j)) * (nwk[j] + beta) * inv[j]
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


@njit(inline="always", cache=True)
def aligned_zeros(n):
    """float64[n] of zeros starting on a 64-byte boundary (a cache line; one AVX-512 vector).

    Where the malloc'd scratch of ``np.zeros`` landed 16 bytes off a line, every vector store into p
    split across two lines, and the branch-free kernel took 45-50 ns a token at K = 50 instead of 32-36
    (about one process in three)."""
    buf = np.zeros(n + 8, dtype=np.float64)
    off = (64 - buf.ctypes.data % 64) % 64 // 8
    return buf[off : off + n]


@njit(cache=True, nogil=True)
def dense_scratch(n_topics):
    """The p scratch of dense_draw, locate and locate_runs: float64[⌈K/_B⌉·_B], zero past K, on a cache line."""
    return aligned_zeros((n_topics + _B - 1) // _B * _B)


@njit(inline="always", cache=True)
def block_runs(p, run):
    """run[b+1] = run[b] + block b's sum (a fixed tree of its 8 entries), run[0] = 0; returns Σp = run[-1].

    p float64[nb·_B] (zero past K), run float64[nb+1].
    """
    acc = 0.0
    one = np.uint64(1)
    for b in range(run.shape[0] - 1):
        x = np.uint64(b) * np.uint64(_B)
        acc += ((p[x] + p[x + one]) + (p[x + np.uint64(2)] + p[x + np.uint64(3)])) + (
            (p[x + np.uint64(4)] + p[x + np.uint64(5)]) + (p[x + np.uint64(6)] + p[x + np.uint64(7)])
        )
        run[b + 1] = acc
    return acc


@njit(inline="always", cache=True)
def locate_runs(p, run, n_topics, t):
    """``locate`` without a branch on t: the block is the count of running sums ≤ t, the slot the count of
    partial sums inside it ≤ t (the last topic if rounding puts t past the end).

    p float64[nb·_B] (zero past K), run float64[nb+1] from ``block_runs``.
    """
    c = np.uint64(0)
    for b in range(1, run.shape[0] - 1):
        c += np.uint64(run[b] <= t)
    t -= run[c]
    x = c * np.uint64(_B)
    x0 = p[x]
    x1 = p[x + np.uint64(1)]
    x2 = p[x + np.uint64(2)]
    x4 = p[x + np.uint64(4)]
    s01 = x0 + x1
    s03 = s01 + (x2 + p[x + np.uint64(3)])
    s45 = x4 + p[x + np.uint64(5)]
    j = np.uint64(x0 <= t) + np.uint64(s01 <= t) + np.uint64(s01 + x2 <= t) + np.uint64(s03 <= t)
    j += np.uint64(s03 + x4 <= t) + np.uint64(s03 + s45 <= t) + np.uint64(s03 + (s45 + p[x + np.uint64(6)]) <= t)
    return np.int64(min(x + j, np.uint64(n_topics - 1)))


@njit(inline="always", cache=True)
def inverse_tables(tot_k, vbeta):
    """1/(N_k + Vβ) now, after one more token and after one fewer: float64[K] each, 64-byte aligned."""
    n_topics = tot_k.shape[0]
    inv, inv_up, inv_dn = aligned_zeros(n_topics), aligned_zeros(n_topics), aligned_zeros(n_topics)
    for k in range(n_topics):
        inv[k] = 1.0 / (tot_k[k] + vbeta)
        inv_up[k] = 1.0 / ((tot_k[k] + 1) + vbeta)
        inv_dn[k] = 1.0 / ((tot_k[k] - 1) + vbeta)
    return inv, inv_up, inv_dn


@njit(inline="always", cache=True)
def leave_topic(k, ndk, nwk, tot_k, inv, inv_up, inv_dn, vbeta):
    """A token leaves topic k (its document's, word's and topic's counts): the new 1/(N_k + Vβ) is the one kept
    ahead, and the division moves off the chain."""
    ndk[k] -= 1
    nwk[k] -= 1
    tot_k[k] -= 1
    inv_up[k] = inv[k]
    inv[k] = inv_dn[k]
    inv_dn[k] = 1.0 / ((tot_k[k] - 1) + vbeta)


@njit(inline="always", cache=True)
def join_topic(k, ndk, nwk, tot_k, inv, inv_up, inv_dn, vbeta):
    """A token joins topic k (the mirror of ``leave_topic``)."""
    ndk[k] += 1
    nwk[k] += 1
    tot_k[k] += 1
    inv_dn[k] = inv[k]
    inv[k] = inv_up[k]
    inv_up[k] = 1.0 / ((tot_k[k] + 1) + vbeta)


@njit(inline="always", cache=True)
def _refresh(k, ndk, nwk, inv, q, p, alpha, beta):
    """Topic k's q entry from its current counts and inv, and its product p_k; returns p_k's change."""
    q[k] = (ndk[k] + alpha_at(alpha, k)) * inv[k]
    v = q[k] * (nwk[k] + beta)
    change = v - p[k]
    p[k] = v
    return change


@njit(cache=True, nogil=True, error_model="numpy")
def runs_block(words, tok, starts, ends, doc_ptr, d0, d1, z, n_dk, tot_wk, tot_k, alpha, beta, vbeta, rng, stream):
    """``_gibbs_block.dense_block`` for K ≤ RUNS_UP_TO: Σp and the draw from ``block_runs`` and ``locate_runs``.

    No fastmath: the block sums stay the trees written (with reassociation LLVM folded them into one chain of
    K additions, 2x slower at K = 200), and the K products need no reduction to vectorise.
    """
    n_topics = tot_k.shape[0]
    p = dense_scratch(n_topics)
    run = aligned_zeros(p.shape[0] // _B + 1)
    inv, inv_up, inv_dn = inverse_tables(tot_k, vbeta)
    q = aligned_zeros(n_topics)  # (n_dk + α) / (N_k + Vβ) of the current document
    own = take_stream(rng, stream)
    for d in range(d0, d1):
        if starts[d] == ends[d]:
            continue
        ndk = n_dk[d]
        for k in range(n_topics):
            q[k] = (ndk[k] + alpha_at(alpha, k)) * inv[k]
        joined = -1  # the topic the previous token joined, whose q entry is still the old one
        for ii in range(starts[d], ends[d]):
            i = ii if tok is None else doc_ptr[d] + tok[ii]
            nwk = tot_wk[np.uint64(words[i])]
            for j in range(n_topics):  # with the two stale entries, fixed below
                p[j] = q[j] * (nwk[j] + beta)
            if joined >= 0:
                _refresh(np.uint64(joined), ndk, nwk, inv, q, p, alpha, beta)
            k = np.uint64(z[i])
            leave_topic(k, ndk, nwk, tot_k, inv, inv_up, inv_dn, vbeta)
            _refresh(k, ndk, nwk, inv, q, p, alpha, beta)
            total = block_runs(p, run)
            k = np.uint64(locate_runs(p, run, n_topics, next_double(own, OWN_ROW) * total))
            z[i] = k
            join_topic(k, ndk, nwk, tot_k, inv, inv_up, inv_dn, vbeta)
            joined = np.int64(k)
    put_stream(rng, stream, own)


@njit(cache=True, fastmath=True, nogil=True, error_model="numpy")
def scan_block(words, tok, starts, ends, doc_ptr, d0, d1, z, n_dk, tot_wk, tot_k, alpha, beta, vbeta, rng, stream):
    """``_gibbs_block.dense_block`` for K > RUNS_UP_TO without word lists: Σp in the products' loop, the draw by
    ``locate``'s early exit."""
    n_topics = tot_k.shape[0]
    p = dense_scratch(n_topics)
    inv, inv_up, inv_dn = inverse_tables(tot_k, vbeta)
    q = aligned_zeros(n_topics)
    own = take_stream(rng, stream)
    for d in range(d0, d1):
        if starts[d] == ends[d]:
            continue
        ndk = n_dk[d]
        for k in range(n_topics):
            q[k] = (ndk[k] + alpha_at(alpha, k)) * inv[k]
        joined = -1
        for ii in range(starts[d], ends[d]):
            i = ii if tok is None else doc_ptr[d] + tok[ii]
            nwk = tot_wk[np.uint64(words[i])]
            total = 0.0
            for j in range(n_topics):
                v = q[j] * (nwk[j] + beta)
                p[j] = v
                total += v
            if joined >= 0:
                total += _refresh(np.uint64(joined), ndk, nwk, inv, q, p, alpha, beta)
            k = np.uint64(z[i])
            leave_topic(k, ndk, nwk, tot_k, inv, inv_up, inv_dn, vbeta)
            total += _refresh(k, ndk, nwk, inv, q, p, alpha, beta)
            k = np.uint64(locate(p, n_topics, next_double(own, OWN_ROW) * total))
            z[i] = k
            join_topic(k, ndk, nwk, tot_k, inv, inv_up, inv_dn, vbeta)
            joined = np.int64(k)
    put_stream(rng, stream, own)
