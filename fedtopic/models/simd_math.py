"""Branch-free float64 primitives that LLVM vectorises inside numba loops (no libm calls, no table lookups).

Numba compiles ``math.log`` to a libm call per element, which keeps a loop scalar; these are polynomial and
bit-level instead, exact to ~1e−16 relative, so loops over counter-based random streams (``gauss_block``,
``privatize``) run in SIMD lanes. Kernels using them need ``error_model="numpy"``: the default puts a
zero-division branch before every division, which blocks vectorisation.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types, uint64
from numba.extending import intrinsic

INV_2_53 = 1.0 / 9007199254740992.0
LN2 = math.log(2.0)
SQRT2 = math.sqrt(2.0)
_MANTISSA = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000
ATANH_SERIES = tuple(1.0 / (2 * i + 1) for i in range(10))  # 1, 1/3, ..., 1/19


@intrinsic
def f64_bits(typingctx, x):
    """The IEEE-754 bits of a float64 as an int64 (a bitcast, no conversion)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))
    return types.int64(types.float64), codegen


@intrinsic
def bits_f64(typingctx, x):
    """The float64 whose IEEE-754 bits are the int64 x."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))
    return types.float64(types.int64), codegen


@njit(inline="always", cache=True)
def open_unit(r):
    """A uniform in (0, 1) from the top 53 bits of the uint64 r: (⌊r/2¹¹⌋ + ½)·2⁻⁵³."""
    return (float(np.int64(r >> uint64(11))) + 0.5) * INV_2_53


@njit(inline="always", cache=True)
def log_open_unit(u):
    """ln u for a normal float64 u in (0, 1): e·ln 2 + 2·atanh((m − 1)/(m + 1)) with u = m·2ᵉ, m in [√½, √2)
    (|s| ≤ 0.1716, odd series to s¹⁹: ~1e−17 relative)."""
    b = f64_bits(u)
    e = (b >> 52) - 1023
    m = bits_f64((b & _MANTISSA) | _ONE_BITS)
    big = m > SQRT2
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    p = ATANH_SERIES[9]
    for i in range(8, -1, -1):
        p = p * s2 + ATANH_SERIES[i]
    return 2.0 * s * p + e * LN2


def numpy_open_unit(r: np.ndarray) -> np.ndarray:
    """numpy twin of ``open_unit`` (uint64 array in, float64 array out)."""
    return ((r >> np.uint64(11)).astype(np.float64) + 0.5) * INV_2_53


def numpy_log_open_unit(u: np.ndarray) -> np.ndarray:
    """numpy twin of ``log_open_unit`` (same formula, same order)."""
    mant, expo = np.frexp(u)  # u = mant·2^expo, mant in [½, 1)
    m, e = 2.0 * mant, expo - 1
    big = m > SQRT2
    m, e = np.where(big, 0.5 * m, m), np.where(big, e + 1, e)
    s = (m - 1.0) / (m + 1.0)
    p = np.full_like(s, ATANH_SERIES[9])
    for coef in ATANH_SERIES[8::-1]:
        p = p * (s * s) + coef
    return 2.0 * s * p + e * LN2
