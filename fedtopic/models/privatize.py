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

from fedtopic.models.laplace_kept import kept_per_token
from fedtopic.models.rng import GOLDEN, splitmix_output
from fedtopic.models.simd_math import log_open_unit, open_unit

_GOLDEN = np.uint64(GOLDEN)


@njit(inline="always", cache=True)
def token_stream(key, token):
    """The xoroshiro128+ state (s0, s1) of token ``token``'s stream under ``key`` (SplitMix64 of the pair)."""
    base = key ^ (uint64(token) * _GOLDEN)
    return splitmix_output(base + _GOLDEN), splitmix_output(base + uint64(2) * _GOLDEN)


CHUNK = 64  # other-word entries drawn per vectorised block


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc", "nsz", "arcp", "contract"})
def privatized_vector(key, token, word, n_words, epsilon, tau, out_words, out_vals):
    """Write token ``token``'s kept entries (word ids, values) into out_words/out_vals; return how many, or −1
    if they do not fit (the caller sizes the buffers with ``buffer_size``).

    ``word`` is the token's true word. Entries come in increasing word order except that the true word comes
    first. The token's draws are the counter-based stream ``splitmix_output(base + c·γ)`` with ``base`` from
    (key, token): draw 0 is the true word's Laplace, then the other words come in blocks of ``CHUNK``, entry t
    of a block taking the geometric skip from one draw and the exponential value from the next. A block's draws
    are independent of each other, so they are computed in one vectorised loop (``simd_math``'s logarithm),
    and a short scalar pass turns the skips into word ids; the draws past the last kept word are unused.
    """
    if not math.isfinite(epsilon):
        out_words[0] = word
        out_vals[0] = 1.0
        return 1
    base, _ = token_stream(key, uint64(token))
    g = uint64(GOLDEN)
    m = 0
    u = open_unit(splitmix_output(base))  # true word: 1 + Laplace(1/ε) by inversion
    lap = (math.log(2.0 * u) if u < 0.5 else -math.log(2.0 * (1.0 - u))) / epsilon
    if 1.0 + lap > tau:
        out_words[m] = word
        out_vals[m] = 1.0 + lap
        m += 1
    p = 0.5 * math.exp(-epsilon * tau)
    if p <= 0.0:
        return m
    inv_log_q = 1.0 / math.log1p(-p)  # P(skip = s) = (1 − p)^s p: skip = ⌊ln U / ln(1 − p)⌋
    cap = out_words.shape[0]
    others = n_words - 1
    j = -1  # index among the V − 1 other words
    counter = uint64(1)
    while True:
        c = min(CHUNK, cap - m)
        if c <= 0:
            return -1
        for t in range(c):  # vectorised: no state is carried from one entry to the next
            x = base + (counter + uint64(2 * t)) * g
            skip = np.floor(log_open_unit(open_unit(splitmix_output(x))) * inv_log_q)
            out_words[m + t] = np.int64(min(skip, 4.0e18))
            out_vals[m + t] = tau - log_open_unit(open_unit(splitmix_output(x + g))) / epsilon
        counter += uint64(2 * c)
        for t in range(c):
            j += out_words[m] + 1
            if j >= others:
                return m
            out_words[m] = j if j < word else j + 1
            m += 1


def expected_entries(n_words: int, epsilon: float, tau: float) -> float:
    """Mean kept entries per token: P(1 + L > τ) + (V − 1)·½e^(−ετ)."""
    return sum(kept_per_token(epsilon, tau, n_words))


def buffer_size(n_words: int, epsilon: float, tau: float) -> int:
    """A scratch size that holds a token's entries except with probability < 1e-12 (Chernoff, generous)."""
    mean = expected_entries(n_words, epsilon, tau)
    return int(min(n_words, mean + 12.0 * math.sqrt(mean) + 64))
