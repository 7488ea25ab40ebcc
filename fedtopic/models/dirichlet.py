"""Dirichlet draws of Φ's rows (iFTM Eq. 7) in parallel numba: Φ_k ~ Dir(C_k + β) for every topic k.

Each row is normalised Gamma(C_kw + β, 1) variates (Marsaglia & Tsang 2000 for shape ≥ 1; for shape < 1,
Gamma(a + 1)·U^(1/a)), from its own xoroshiro stream seeded by (key, row), so the draw does not depend on the
number of threads. Exact up to float64 rounding; replaces numpy's serial ``Generator.gamma`` over K × V cells,
which cost 0.14 s of every iteration at K = 1,000, V = 5,000.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange, uint64

from fedtopic.models.normal import ZIG_F, ZIG_K, ZIG_W, normal_draw, xo_double
from fedtopic.models.privatize import token_stream


@njit(inline="always", cache=True)
def _gamma(shape, s0, s1):
    """(Gamma(shape, 1) variate, s0, s1) for shape > 0."""
    boost = 1.0
    a = shape
    if a < 1.0:
        u, s0, s1 = xo_double(s0, s1)
        boost = math.exp(math.log1p(-u) / a) if u < 1.0 else 0.0  # U^(1/a) with U in (0, 1]
        a += 1.0
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x, s0, s1 = normal_draw(s0, s1, ZIG_K, ZIG_W, ZIG_F)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u, s0, s1 = xo_double(s0, s1)
        if u < 1.0 - 0.0331 * x * x * x * x or math.log(u) < 0.5 * x * x + d * (1.0 - v + math.log(v)):
            return d * v * boost, s0, s1


@njit(cache=True, parallel=True)
def dirichlet_rows(counts, beta, key):
    """float64[K,V]: row k ~ Dir(counts[k] + β); counts float64[K,V] ≥ 0, ``key`` a uint64 seed."""
    n_rows, n_cols = counts.shape
    out = np.empty((n_rows, n_cols))
    for k in prange(n_rows):
        s0, s1 = token_stream(key, uint64(k))
        total = 0.0
        for w in range(n_cols):
            g, s0, s1 = _gamma(counts[k, w] + beta, s0, s1)
            out[k, w] = g
            total += g
        if total > 0.0:
            for w in range(n_cols):
                out[k, w] /= total
        else:
            for w in range(n_cols):
                out[k, w] = 1.0 / n_cols
    return out


@njit(cache=True)
def gamma_draws(shape, n, key):
    """float64[n] Gamma(shape, 1) variates from one stream (tests)."""
    s0, s1 = token_stream(key, uint64(0))
    out = np.empty(n)
    for i in range(n):
        out[i], s0, s1 = _gamma(shape, s0, s1)
    return out
