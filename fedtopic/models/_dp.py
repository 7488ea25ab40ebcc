"""SUB-LDA's differentially private collapsed Gibbs sweep (Huang & Chen, Alg. 1) as one numba kernel.

For every token i (word t, document m, current topic k_i), in document order:

1. **Poisson subsampling** (Def. 3.3): the token is in this iteration's batch
   with probability ``rate``: γ for uniform subsampling; for adaptive
   subsampling (§5.6, Eq. 10) vγ if t is in topic k_i's frequent-word set
   (``freq[t, k_i]``), else 0. One uniform is consumed unless rate is 0 or ≥ 1.
2. For a sampled token, its counts are removed and the word's row n_k^t is read
   **with fresh N(0, σ²) noise on every k** (K normals), clipped to
   [0, ``clip``] (Alg. 1 clips only above; below, a negative count would give a
   negative probability, so it is clamped at 0: post-processing, no privacy
   cost), and Eq. 1's conditional
   p_k ∝ (ñ_k^t + β) / (N_k + Vβ) · (n_m^k + τ) is drawn from with one uniform.
   The drawn topic updates the **true** counts.

Eq. 1's denominators use the true topic totals N_k, as the paper's Alg. 1 does.
With σ = 0, rate 1 and no clip the kernel consumes exactly the uniforms of the
plain dense kernel and returns its result bit for bit (tested).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from fedtopic.models._dense import dense_draw, dense_scratch
from fedtopic.models.normal import ZIG_F, ZIG_K, ZIG_W, normal_draw, xo_double


# fastmath without nnan/ninf: the sums vectorise as in the dense kernel, while clip = inf stays meaningful
@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc", "nsz", "arcp", "contract"})
def dp_shard(
    words: np.ndarray,  # int32[N]
    doc_ptr: np.ndarray,  # int64[D+1]
    z: np.ndarray,  # int32[N], updated
    n_dk: np.ndarray,  # int32[D,K], updated
    tot_wk: np.ndarray,  # int32[V,K] total word-topic counts, updated
    tot_k: np.ndarray,  # int64[K] total topic counts, updated
    alpha: float,
    beta: float,
    vbeta: float,  # V·β
    rate: float,  # γ (uniform) or vγ (adaptive, for frequent words)
    freq: np.ndarray,  # uint8[V,K]: frequent-word sets (adaptive); uint8[0,0] for uniform subsampling
    sigma: float,  # noise standard deviation (0: no noise)
    clip: float,  # upper clip of a noised count (inf: none)
    rng: np.ndarray,  # uint64[S,2]
    stream: int,
) -> int:
    """One DP sweep over all documents in place; returns how many tokens were sampled."""
    n_topics = tot_k.shape[0]
    adaptive = freq.shape[0] > 0
    p, blk = dense_scratch(n_topics)
    inv = np.empty(n_topics, dtype=np.float64)
    noised = np.empty(n_topics, dtype=np.float64)
    for k in range(n_topics):
        inv[k] = 1.0 / (tot_k[k] + vbeta)
    s0, s1 = rng[stream, 0], rng[stream, 1]
    sampled = 0
    for d in range(doc_ptr.shape[0] - 1):
        ndk = n_dk[d]
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            w = words[i]
            k = z[i]
            r = rate if not adaptive else (rate if freq[w, k] else 0.0)
            if r <= 0.0:
                continue
            if r < 1.0:
                u, s0, s1 = xo_double(s0, s1)
                if u >= r:
                    continue
            sampled += 1
            nwk = tot_wk[w]
            ndk[k] -= 1
            nwk[k] -= 1
            tot_k[k] -= 1
            inv[k] = 1.0 / (tot_k[k] + vbeta)
            if sigma > 0.0:
                for j in range(n_topics):
                    e, s0, s1 = normal_draw(s0, s1, ZIG_K, ZIG_W, ZIG_F)
                    v = nwk[j] + sigma * e
                    noised[j] = min(max(v, 0.0), clip)
            else:
                for j in range(n_topics):
                    noised[j] = min(max(float(nwk[j]), 0.0), clip)
            u, s0, s1 = xo_double(s0, s1)
            k = dense_draw(ndk, noised, inv, p, blk, alpha, beta, u)
            z[i] = k
            ndk[k] += 1
            nwk[k] += 1
            tot_k[k] += 1
            inv[k] = 1.0 / (tot_k[k] + vbeta)
    rng[stream, 0], rng[stream, 1] = s0, s1
    return sampled
