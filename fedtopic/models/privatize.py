"""iFTM's privatised input (Jiang et al., Eqs. 9–10, Alg. 1 lines 1–6), sampled sparsely and exactly, in numba.

Each token's word-indicator vector n_di (one 1 at its word w, V − 1 zeros) gets
Laplace(1/ε) noise on all V entries, and entries ≤ τ are set to 0 (τ ≥ 0). The
kept entries have an exact sparse description, which is what is sampled:

* the true word, with value 1 + Laplace(1/ε), kept if that exceeds τ;
* every other word independently with probability p = P(Laplace(1/ε) > τ)
  = ½·e^(−ετ), with value τ + Exponential(rate ε) (the Laplace tail beyond τ
  is exponential). The kept other words are found by geometric skips over
  the V − 1 candidates, so their number is exactly Binomial(V − 1, p) and their
  set uniform, in O(kept) time instead of V Laplace draws.

Memory: at V = 20,000, ε = 11, τ = 0.2 a token keeps ~1,100 entries; stored,
20newsgroups would need ~13 GB. Instead every token's vector is *regenerated*
whenever it is needed, from a counter-based stream keyed by a per-corpus
secret (``key``) and the token's index: the privatised data are fixed once (the
same vector on every visit, so the mechanism is applied once, as Eq. 9 says)
and cost no memory. Whoever holds ``key`` and the corpus can regenerate them;
the key stays with the party like its documents.

ε = ∞ switches privatisation off: the vector is e_w exactly.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, uint64

from fedtopic.models.normal import xo_double, xo_next
from fedtopic.models.rng import GOLDEN, splitmix_output

_GOLDEN = np.uint64(GOLDEN)


@njit(inline="always", cache=True)
def token_stream(key, token):
    """The xoroshiro128+ state (s0, s1) of token ``token``'s stream under ``key`` (SplitMix64 of the pair)."""
    base = key ^ (uint64(token) * _GOLDEN)
    return splitmix_output(base + _GOLDEN), splitmix_output(base + uint64(2) * _GOLDEN)


@njit(cache=True, nogil=True)
def privatized_vector(key, token, word, n_words, epsilon, tau, out_words, out_vals):
    """Write token ``token``'s kept entries (word ids, values) into out_words/out_vals; return how many.

    ``word`` is the token's true word. out_* must hold at least ``max_entries(n_words, epsilon, tau)`` + 1
    entries (a ValueError-free bound is checked by the caller). Entries come in increasing word order except
    that the true word comes first.
    """
    if not math.isfinite(epsilon):
        out_words[0] = word
        out_vals[0] = 1.0
        return 1
    s0, s1 = token_stream(key, uint64(token))
    m = 0
    u, s0, s1 = xo_double(s0, s1)  # true word: 1 + Laplace(1/ε) by inversion
    lap = (math.log(2.0 * u) if u < 0.5 else -math.log(2.0 * (1.0 - u))) / epsilon if u > 0.0 else -1e300
    if 1.0 + lap > tau:
        out_words[m] = word
        out_vals[m] = 1.0 + lap
        m += 1
    p = 0.5 * math.exp(-epsilon * tau)
    if p <= 0.0:
        return m
    log_q = math.log1p(-p) if p < 1.0 else -math.inf
    j = -1  # index among the V − 1 other words
    others = n_words - 1
    while True:
        u, s0, s1 = xo_double(s0, s1)
        skip = 0 if log_q == -math.inf else int(math.floor(math.log1p(-u) / log_q))
        j += skip + 1
        if j >= others:
            return m
        if m >= out_words.shape[0]:
            return -1  # the caller's buffer is too small
        r, s0, s1 = xo_next(s0, s1)
        e = -math.log1p(-float(np.int64(r >> uint64(11))) * 1.1102230246251565e-16) / epsilon
        out_words[m] = j if j < word else j + 1
        out_vals[m] = tau + e
        m += 1


def expected_entries(n_words: int, epsilon: float, tau: float) -> float:
    """Mean kept entries per token: P(1 + L > τ) + (V − 1)·½e^(−ετ)."""
    if not math.isfinite(epsilon):
        return 1.0
    true_kept = 1.0 - 0.5 * math.exp(-epsilon * (1.0 - tau)) if tau <= 1.0 else 0.5 * math.exp(-epsilon * (tau - 1.0))
    return true_kept + (n_words - 1) * 0.5 * math.exp(-epsilon * tau)


def buffer_size(n_words: int, epsilon: float, tau: float) -> int:
    """A scratch size that holds a token's entries except with probability < 1e-12 (Chernoff, generous)."""
    mean = expected_entries(n_words, epsilon, tau)
    return int(min(n_words, mean + 12.0 * math.sqrt(mean) + 64))
