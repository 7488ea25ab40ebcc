"""Slow pure-numpy reference of one collapsed Gibbs sweep (Eq. 10), for tests.

It draws its uniforms from the same xoroshiro128+ stream as the dense numba
kernel (rng.PyXoroshiro, stream 0, one uniform per token) and locates the draw
with ``searchsorted(cumsum(p), u·Σp, 'right')``, so after a sweep with
threads=1 the kernel and the reference give identical z and counts.
"""

from __future__ import annotations

import numpy as np

from fedtopic.models.rng import (
    _INV_2_53,
    _MASK,
    _SPLITMIX_M1,
    _SPLITMIX_M2,
    GOLDEN,
    PyXoroshiro,
)
from fedtopic.models.state import LDAState


def conditional(
    n_dk_row: np.ndarray, tot_wk_row: np.ndarray, tot_k: np.ndarray, alpha: float, beta: float, vbeta: float
) -> np.ndarray:
    """float64[K] unnormalised Eq. 10 for one token whose own counts are already removed."""
    inv = 1.0 / (tot_k + vbeta)
    return (n_dk_row + alpha) * (tot_wk_row + beta) * inv


def reference_sweep(
    state: LDAState,
    words: np.ndarray,
    doc_ptr: np.ndarray,
    alpha: float,
    beta: float,
    frozen_wk: np.ndarray | None = None,
    frozen_k: np.ndarray | None = None,
) -> None:
    """Sequential exact Gibbs sweep in place; only the state's own counts change (frozen ones are read)."""
    n_words, n_topics = state.n_wk.shape
    vbeta = n_words * beta
    f_wk = np.zeros_like(state.n_wk) if frozen_wk is None else frozen_wk
    f_k = f_wk.sum(axis=0) if frozen_k is None else frozen_k
    gen = PyXoroshiro(state.rng, 0)
    for d in range(len(doc_ptr) - 1):
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            w, k = words[i], state.z[i]
            state.n_dk[d, k] -= 1
            state.n_wk[w, k] -= 1
            state.n_k[k] -= 1
            p = conditional(
                state.n_dk[d].astype(np.float64),
                (state.n_wk[w] + f_wk[w]).astype(np.float64),
                (state.n_k + f_k).astype(np.float64),
                alpha,
                beta,
                vbeta,
            )
            cum = np.cumsum(p)
            k = min(int(np.searchsorted(cum, gen.next_double() * cum[-1], side="right")), n_topics - 1)
            state.z[i] = k
            state.n_dk[d, k] += 1
            state.n_wk[w, k] += 1
            state.n_k[k] += 1
    gen.store()



def reference_bucket_sweep(
    state: LDAState,
    words: np.ndarray,
    doc_ptr: np.ndarray,
    alpha,
    beta: float,
    frozen_wk: np.ndarray | None = None,
) -> None:
    """Sequential exact Gibbs sweep in place by SparseLDA's buckets, as ``_buckets.bucket_block`` orders them: the
    q bucket over the word's topic list (built in increasing order, a topic at N_wk = 0 swapped out by the
    list's last, a new one appended), the r bucket over the document's topics in order of first appearance, the
    s bucket over every topic. The same uniforms as the kernel, so the same draws."""
    n_words, n_topics = state.n_wk.shape
    vbeta = n_words * beta
    f_wk = np.zeros_like(state.n_wk) if frozen_wk is None else frozen_wk
    tot_wk = state.n_wk + f_wk
    tot_k = state.n_k + f_wk.sum(axis=0)
    alpha_k = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (n_topics,))
    lists = [list(np.flatnonzero(tot_wk[w])) for w in range(n_words)]
    gen = PyXoroshiro(state.rng, 0)
    for d in range(len(doc_ptr) - 1):
        doc = list(dict.fromkeys(int(k) for k in state.z[doc_ptr[d]:doc_ptr[d + 1]]))
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            w, k = words[i], state.z[i]
            state.n_dk[d, k] -= 1
            tot_wk[w, k] -= 1
            tot_k[k] -= 1
            if tot_wk[w, k] == 0:
                at, last = lists[w].index(k), lists[w].pop()
                if at < len(lists[w]):
                    lists[w][at] = last
            inv = 1.0 / (tot_k + vbeta)
            held = np.array(lists[w], dtype=np.int64)
            run = np.cumsum(tot_wk[w, held] * ((state.n_dk[d, held] + alpha_k[held]) * inv[held]))
            q_sum = run[-1] if len(held) else 0.0
            r_part = np.array([state.n_dk[d, j] * inv[j] for j in doc])
            s_part = alpha_k * inv
            t = gen.next_double() * (q_sum + beta * (r_part.sum() + s_part.sum()))
            if t < q_sum:
                k = held[min(int(np.count_nonzero(run <= t)), len(held) - 1)]
            else:
                t = (t - q_sum) / beta
                if t < r_part.sum():
                    positive = [j for j in doc if state.n_dk[d, j] > 0]
                    at = int(np.searchsorted(np.cumsum(r_part[[doc.index(j) for j in positive]]), t, side="right"))
                    k = positive[min(at, len(positive) - 1)]
                else:
                    at = int(np.searchsorted(np.cumsum(s_part), t - r_part.sum(), side="right"))
                    k = min(at, n_topics - 1)
            if tot_wk[w, k] == 0:
                lists[w].append(k)
            state.z[i] = k
            state.n_dk[d, k] += 1
            tot_wk[w, k] += 1
            tot_k[k] += 1
            if k not in doc:
                doc.append(int(k))
    gen.store()
    state.n_wk[:] = tot_wk - f_wk
    state.n_k[:] = tot_k - f_wk.sum(axis=0)

def reference_dp_sweep(
    state: LDAState,
    words: np.ndarray,
    doc_ptr: np.ndarray,
    alpha: float,
    beta: float,
    *,
    rate: float,
    sigma: float,
    clip: float = np.inf,
    freq: np.ndarray | None = None,
) -> int:
    """Slow twin of ``_dp.dp_shard`` (SUB-LDA Alg. 1): same uniforms and noise stream; returns the number of
    sampled tokens. ``freq`` bool[V,K] switches on adaptive subsampling (rate applies to frequent words)."""
    from fedtopic.models._dp import noise_block_size
    from fedtopic.models.gauss_block import numpy_normals

    n_words, n_topics = state.n_wk.shape
    vbeta = n_words * beta
    gen = PyXoroshiro(state.rng, 0)
    key = gen.next_u64() if sigma > 0 else 0
    size = noise_block_size(n_topics)
    block, noise_block, used = 0, np.empty(0), size
    sampled = 0
    for d in range(len(doc_ptr) - 1):
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            w, k = words[i], state.z[i]
            r = rate if freq is None else (rate if freq[w, k] else 0.0)
            if r <= 0.0 or (r < 1.0 and gen.next_double() >= r):
                continue
            sampled += 1
            state.n_dk[d, k] -= 1
            state.n_wk[w, k] -= 1
            state.n_k[k] -= 1
            noise = np.zeros(n_topics)
            if sigma > 0:
                if used + n_topics > size:
                    noise_block, block, used = numpy_normals(key, block, size), block + 1, 0
                noise, used = noise_block[used:used + n_topics], used + n_topics
            noised = np.clip(state.n_wk[w] + sigma * noise, 0.0, clip)
            p = conditional(state.n_dk[d].astype(np.float64), noised, state.n_k.astype(np.float64), alpha, beta, vbeta)
            cum = np.cumsum(p)
            k = min(int(np.searchsorted(cum, gen.next_double() * cum[-1], side="right")), n_topics - 1)
            state.z[i] = k
            state.n_dk[d, k] += 1
            state.n_wk[w, k] += 1
            state.n_k[k] += 1
    gen.store()
    return sampled


def _counter_uniform_py(key: int, c: int) -> float:
    """The kernel's counter stream (_cycle_mh.counter_uniform) in Python ints."""
    z = (key + c * GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * _SPLITMIX_M1) & _MASK
    z = ((z ^ (z >> 27)) * _SPLITMIX_M2) & _MASK
    return ((z ^ (z >> 31)) >> 11) * _INV_2_53


def reference_cycle_sweep(
    state: LDAState,
    words: np.ndarray,
    doc_ptr: np.ndarray,
    alpha: float,
    beta: float,
    mh_steps: int = 1,
    frozen_wk: np.ndarray | None = None,
    frozen_k: np.ndarray | None = None,
    exact_below: int = 0,
) -> None:
    """Slow twin of ``_cycle_mh.cycle_shard`` (one shard): same scan order, uniforms, document topic lists and
    arithmetic, so the kernel with threads=1 gives identical z and counts. The frozen counts' alias tables come
    from the same builder."""
    from fedtopic.models._alias import build_word_alias

    n_words, n_topics = state.n_wk.shape
    vbeta = n_words * beta
    f_wk = np.zeros_like(state.n_wk) if frozen_wk is None else frozen_wk
    f_k = f_wk.sum(axis=0) if frozen_k is None else frozen_k
    tot_wk = (state.n_wk + f_wk).astype(np.int32)
    tot_k = (state.n_k + f_k).astype(np.int64)
    f_ptr, f_top, f_prob, f_alt, f_mass = build_word_alias(f_wk.astype(np.int32), np.zeros(n_topics, np.int64),
                                                           1.0, 1.0)[:5]
    inv = 1.0 / (tot_k + vbeta)
    gen = PyXoroshiro(state.rng, 0)
    key = gen.next_u64()
    order = np.argsort(words, kind="stable")
    word_ptr = np.concatenate([[0], np.cumsum(np.bincount(words, minlength=n_words))])
    doc_of = np.repeat(np.arange(len(doc_ptr) - 1), np.diff(doc_ptr))
    z_w = state.z[order].astype(np.int64)
    # every document's topic list, in the kernel's order: first appearance in z at the start, then swap-out, append
    lists = [list(dict.fromkeys(state.z[doc_ptr[d]:doc_ptr[d + 1]].tolist())) for d in range(len(doc_ptr) - 1)]
    c_word = n_topics / ((int(tot_k.sum()) - 1) + n_topics * vbeta)

    def word_topic(u01: float, w: int, j: int, s: int) -> int:
        run_len, f_mass_w = int(word_ptr[w + 1] - word_ptr[w]), (f_mass[w] if frozen_wk is not None else 0.0)
        u = u01 * (run_len + f_mass_w + n_topics * beta)
        if u < run_len:
            pos = int(word_ptr[w]) + min(int(u), run_len - 1)
            return s if pos == j else int(z_w[pos])
        u -= run_len
        if u < f_mass_w:
            n = int(f_ptr[w + 1] - f_ptr[w])
            x = (u / f_mass_w) * n
            e = min(int(x), n - 1)
            slot = int(f_ptr[w]) + e
            return int(f_top[slot] if x - e < f_prob[slot] else f_alt[slot])
        return min(int((u - f_mass_w) / beta), n_topics - 1)

    def cycles(w: int, d: int, s: int, i: int, j: int, base: int, length: int) -> int:
        for r in range(mh_steps):
            t = word_topic(_counter_uniform_py(key, 2 * mh_steps * j + 2 * r), w, j, s)
            if t != s:
                g_t = tot_wk[w, t] + beta  # the proposal's weight: this shard's tokens of w plus F, as the totals
                g_s = tot_wk[w, s] + beta
                p_t = (state.n_dk[d, t] + alpha) * ((tot_wk[w, t] + beta) * inv[t])
                p_s = (state.n_dk[d, s] + alpha) * ((tot_wk[w, s] + beta) * inv[s])
                if gen.next_double() * (p_s * g_t) < p_t * g_s:
                    s = t
            u = _counter_uniform_py(key, 2 * mh_steps * j + 2 * r + 1) * (length + n_topics * alpha)
            if u < length:
                pos = base + min(int(u), length - 1)
                t = s if pos == i else int(state.z[pos])
            else:
                t = min(int((u - length) / alpha), n_topics - 1)
            if t != s and gen.next_double() * ((tot_wk[w, s] + beta) * inv[s]) < (tot_wk[w, t] + beta) * inv[t]:
                s = t
        return s

    def exact_document_move(w: int, d: int, s: int, j: int, topics: list[int]) -> int:
        phi = (tot_wk[w] + beta) * inv
        cum = np.cumsum([state.n_dk[d, k] * phi[k] for k in topics]) if topics else np.zeros(0)
        p_doc = float(cum[-1]) if topics else 0.0
        f_mass_w = f_mass[w] if frozen_wk is not None else 0.0
        a_word = alpha * c_word * (int(word_ptr[w + 1] - word_ptr[w]) + f_mass_w + n_topics * beta)
        u = gen.next_double() * (p_doc + a_word)
        if u < p_doc:  # the first slot whose running sum passes u
            t = topics[min(int(np.searchsorted(cum, u, side="right")), len(topics) - 1)]
        else:
            t = word_topic(_counter_uniform_py(key, 2 * mh_steps * j), w, j, s)
        if t == s:
            return s
        g_t = tot_wk[w, t] + beta  # the proposal's weight: this shard's tokens of w plus F, as the totals
        g_s = tot_wk[w, s] + beta
        q_t = state.n_dk[d, t] * phi[t] + alpha * c_word * g_t
        q_s = state.n_dk[d, s] * phi[s] + alpha * c_word * g_s
        accept = gen.next_double() * ((state.n_dk[d, s] + alpha) * phi[s] * q_t) < (
            (state.n_dk[d, t] + alpha) * phi[t] * q_s)
        return t if accept else s

    for j, i in enumerate(order):
        w, d, s = int(words[i]), int(doc_of[i]), int(z_w[j])
        base, length = int(doc_ptr[d]), int(doc_ptr[d + 1] - doc_ptr[d])
        state.n_dk[d, s] -= 1
        tot_wk[w, s] -= 1
        tot_k[s] -= 1
        inv[s] = 1.0 / (tot_k[s] + vbeta)
        topics = lists[d]
        if state.n_dk[d, s] == 0:  # swapped out of the list, as the kernel does
            e = topics.index(s)
            topics[e] = topics[-1]
            topics.pop()
        if len(topics) <= exact_below:
            s = exact_document_move(w, d, s, j, topics)
        else:
            s = cycles(w, d, s, i, j, base, length)
        if state.n_dk[d, s] == 0:
            topics.append(s)
        z_w[j] = s
        state.z[i] = s
        state.n_dk[d, s] += 1
        tot_wk[w, s] += 1
        tot_k[s] += 1
        inv[s] = 1.0 / (tot_k[s] + vbeta)
    state.n_wk[:] = tot_wk - f_wk
    state.n_k[:] = tot_k - f_k
    gen.store()


def reference_private_exact_sweep(
    words: np.ndarray,
    doc_ptr: np.ndarray,
    z: np.ndarray,
    n_dk: np.ndarray,
    ckw: np.ndarray,
    ck: np.ndarray,
    phi: np.ndarray,
    alpha: float,
    prob: np.ndarray,
    alt: np.ndarray,
    weight: np.ndarray,
    rng: np.ndarray,
    stream: int = 0,
) -> int:
    """Slow twin of ``_mh_private_exact.mh_sweep_exact``: same scan order, uniforms and arithmetic, so the kernel
    gives identical z and counts; returns the accepted moves."""
    n_topics = n_dk.shape[1]
    gen = PyXoroshiro(rng, stream)
    key = gen.next_u64()
    doc_of = np.repeat(np.arange(len(doc_ptr) - 1), np.diff(doc_ptr))
    accepted = 0
    for j, i in enumerate(np.argsort(words, kind="stable")):
        w, d, s = int(words[i]), int(doc_of[i]), int(z[i])
        base, length = int(doc_ptr[d]), int(doc_ptr[d + 1] - doc_ptr[d])
        u = _counter_uniform_py(key, 2 * j) * (length + n_topics * alpha)
        doc_t = int(z[base + min(int(u), length - 1)]) if u < length else min(int((u - length) / alpha), n_topics - 1)
        x = _counter_uniform_py(key, 2 * j + 1) * n_topics
        e = min(int(x), n_topics - 1)
        word_t = e if x - e < prob[w, e] else int(alt[w, e])
        for phase, t in enumerate((doc_t, word_t)):
            if t == s:
                continue
            if phase == 0:
                accept = gen.next_double() * phi[s, w] < phi[t, w]
            else:
                accept = (gen.next_double() * ((n_dk[d, s] - 1 + alpha) * phi[s, w] * weight[w, t])
                          < (n_dk[d, t] + alpha) * phi[t, w] * weight[w, s])
            if accept:
                n_dk[d, s] -= 1
                n_dk[d, t] += 1
                ckw[s, w] -= 1.0
                ckw[t, w] += 1.0
                ck[s] -= 1.0
                ck[t] += 1.0
                z[i] = t
                s = t
                accepted += 1
    gen.store()
    return accepted
