"""Slow pure-numpy reference of one collapsed Gibbs sweep (Eq. 10), for tests.

It draws its uniforms from the same xoroshiro128+ stream as the dense numba
kernel (rng.PyXoroshiro, stream 0, one uniform per token) and locates the draw
with ``searchsorted(cumsum(p), u·Σp, 'right')``, so after a sweep with
threads=1 the kernel and the reference give identical z and counts.
"""

from __future__ import annotations

import numpy as np

from fedtopic.models.rng import PyXoroshiro
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
