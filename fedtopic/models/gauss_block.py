"""Blocks of standard normals that LLVM vectorises: a counter-based SplitMix64 stream and a shared-radius Box–Muller.

Why: SUB-LDA reads K noised counts for every sampled token (Alg. 1), so at
K = 100 a DP sweep draws 100 normals per token and the noise, not the sampler,
sets its cost. The scalar ziggurat of ``normal.py`` costs ~1.4 ns per draw
here; a block of draws written as one loop with no branches, no table lookups
and no loop-carried state runs in SIMD lanes (AVX2/AVX-512) at ~0.5 ns.

**Uniforms.** Draw c of the stream keyed ``key`` is
``rng.splitmix_output(key + c·γ)``, SplitMix64's output function over its Weyl
sequence (Steele, Lea & Flood 2014; γ the golden-ratio constant). Any counter can be computed without the ones
before it, so a block is a plain loop over counters. u(r) = (⌊r/2¹¹⌋ + ½)·2⁻⁵³
lies in (0, 1).

**Normals, eight at a time** (group g uses the 11 counters 11g … 11g + 10):

- radius² R² = −2 ln(u₁u₂u₃u₄) ~ χ²₈ (a Gamma(4, 1) variable doubled), one
  logarithm for eight draws;
- direction uniform on the sphere S⁷ ⊂ ℂ⁴: the squared moduli (w₀ … w₃) are
  the spacings of three sorted uniforms, i.e. Dirichlet(1, 1, 1, 1), and the
  four phases are independent and uniform; the pair i is
  √(R²wᵢ)·(cos φᵢ, sin φᵢ). This is Box–Muller (Box & Muller 1958) in four
  complex dimensions: eight iid N(0, 1) draws, exactly;
- ln p = e·ln 2 + 2·atanh((m − 1)/(m + 1)) for p = m·2ᵉ, m in [√½, √2)
  (odd series to s¹⁹, |s| ≤ 0.1716: ~1e−17 relative);
- a phase from one uint64 r: bits 0 and 1 flip the two signs, bit 2 reflects
  across the diagonal (cos ↔ sin), bit 3 picks the half of the octant, and the
  top 53 bits give the offset a, |a| ≤ π/16, from that half's centre
  (π/16 or 3π/16); cos a and sin a are Taylor polynomials to a¹⁰ and a¹¹
  (error < 1e−17) and the angle-sum formula rotates them to the centre. The
  phase is then uniform on [0, 2π).

Exact up to float64 rounding and those truncations (below 1e−15 relative);
|x| ≤ 17.3 (the radius's bound: R² ≤ −2 ln 2⁻²¹⁶), beyond which the normal's mass is ~1e−67.

**Layout.** ``fill_normals(key, block, out)`` writes block number ``block`` of
n normals (n a multiple of 8): group g's eight draws go to out[g + j·n/8],
j = 0 … 7, so every store is contiguous across SIMD lanes. Block b uses the
counters from 11·(n/8)·b. ``numpy_normals`` is the pure-numpy twin (same
formula, same order; the two agree to ~1e−15, the difference being fused
multiply-adds).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, uint64

from fedtopic.errors import ModelError
from fedtopic.models.rng import GOLDEN, numpy_splitmix_output, splitmix_output
from fedtopic.models.simd_math import (
    INV_2_53,
    bits_f64,
    f64_bits,
    log_open_unit,
    numpy_log_open_unit,
    numpy_open_unit,
    open_unit,
)

COUNTERS_PER_GROUP = 11  # uniforms behind eight normals
_EIGHTH_PI = math.pi / 8.0
_C1, _S1 = math.cos(math.pi / 16.0), math.sin(math.pi / 16.0)
_C3, _S3 = math.cos(3.0 * math.pi / 16.0), math.sin(3.0 * math.pi / 16.0)
_SIN = tuple((-1) ** i / math.factorial(2 * i + 1) for i in range(6))  # a, ..., a^11
_COS = tuple((-1) ** i / math.factorial(2 * i) for i in range(6))  # 1, ..., a^10
FASTMATH = {"reassoc", "nsz", "arcp", "contract"}  # no nnan/ninf: callers keep clip = inf meaningful


@njit(inline="always", cache=True)
def _pair(r, radius):
    """radius·(cos φ, sin φ) with the phase φ taken from the uint64 r (see the module docstring)."""
    a = (float(np.int64(r >> uint64(11))) * INV_2_53 - 0.5) * _EIGHTH_PI
    a2 = a * a
    sa = _SIN[5]
    ca = _COS[5]
    for i in range(4, -1, -1):
        sa = sa * a2 + _SIN[i]
        ca = ca * a2 + _COS[i]
    sa = sa * a
    upper = (r >> uint64(3)) & uint64(1)
    cc = _C3 if upper else _C1
    sc = _S3 if upper else _S1
    c = (cc * ca - sc * sa) * radius
    s = (sc * ca + cc * sa) * radius
    swap = (r >> uint64(2)) & uint64(1)
    x = s if swap else c
    y = c if swap else s
    x = bits_f64(f64_bits(x) ^ np.int64(r << uint64(63)))
    y = bits_f64(f64_bits(y) ^ np.int64((r >> uint64(1)) << uint64(63)))
    return x, y


@njit(cache=True, nogil=True, error_model="numpy", fastmath=FASTMATH)
def fill_normals(key: np.uint64, block: int, out: np.ndarray) -> None:
    """Block ``block`` of the stream ``key`` into out float64[n] (n a multiple of 8): n standard normals."""
    n8 = out.shape[0] // 8
    g = uint64(GOLDEN)
    start = uint64(key) + uint64(COUNTERS_PER_GROUP * n8) * uint64(block) * g
    for i in range(n8):
        x = start + uint64(COUNTERS_PER_GROUP * i) * g
        prod = open_unit(splitmix_output(x)) * open_unit(splitmix_output(x + g))
        prod *= open_unit(splitmix_output(x + uint64(2) * g)) * open_unit(splitmix_output(x + uint64(3) * g))
        r2 = -2.0 * log_open_unit(prod)
        v1 = open_unit(splitmix_output(x + uint64(4) * g))
        v2 = open_unit(splitmix_output(x + uint64(5) * g))
        v3 = open_unit(splitmix_output(x + uint64(6) * g))
        lo, hi = min(v1, v2), max(v1, v2)  # a three-comparator sorting network
        mid, top = min(hi, v3), max(hi, v3)
        low, mid = min(lo, mid), max(lo, mid)
        out[i], out[i + n8] = _pair(splitmix_output(x + uint64(7) * g), math.sqrt(r2 * low))
        out[i + 2 * n8], out[i + 3 * n8] = _pair(splitmix_output(x + uint64(8) * g), math.sqrt(r2 * (mid - low)))
        out[i + 4 * n8], out[i + 5 * n8] = _pair(splitmix_output(x + uint64(9) * g), math.sqrt(r2 * (top - mid)))
        out[i + 6 * n8], out[i + 7 * n8] = _pair(splitmix_output(x + uint64(10) * g), math.sqrt(r2 * (1.0 - top)))


def _np_pair(r: np.ndarray, radius: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = ((r >> np.uint64(11)).astype(np.float64) * INV_2_53 - 0.5) * _EIGHTH_PI
    sa, ca = np.full_like(a, _SIN[5]), np.full_like(a, _COS[5])
    for cs, cc in zip(_SIN[4::-1], _COS[4::-1]):
        sa, ca = sa * (a * a) + cs, ca * (a * a) + cc
    sa = sa * a
    upper = ((r >> np.uint64(3)) & np.uint64(1)).astype(bool)
    cc, sc = np.where(upper, _C3, _C1), np.where(upper, _S3, _S1)
    c, s = (cc * ca - sc * sa) * radius, (sc * ca + cc * sa) * radius
    swap = ((r >> np.uint64(2)) & np.uint64(1)).astype(bool)
    x, y = np.where(swap, s, c), np.where(swap, c, s)
    x = np.where((r & np.uint64(1)).astype(bool), -x, x)
    y = np.where(((r >> np.uint64(1)) & np.uint64(1)).astype(bool), -y, y)
    return x, y


def numpy_normals(key: int, block: int, n: int) -> np.ndarray:
    """Pure-numpy twin of ``fill_normals``: block ``block`` of n normals of the stream ``key``."""
    if n % 8:
        raise ModelError(f"a block of normals holds a multiple of 8 draws, got {n}")
    n8 = n // 8
    with np.errstate(over="ignore"):
        c = np.uint64(COUNTERS_PER_GROUP * n8 * block) + np.arange(COUNTERS_PER_GROUP * n8, dtype=np.uint64)
        r = numpy_splitmix_output(np.uint64(key) + c * np.uint64(GOLDEN)).reshape(n8, COUNTERS_PER_GROUP)
    u = numpy_open_unit(r[:, :7])
    r2 = -2.0 * numpy_log_open_unit((u[:, 0] * u[:, 1]) * (u[:, 2] * u[:, 3]))
    lo, hi = np.minimum(u[:, 4], u[:, 5]), np.maximum(u[:, 4], u[:, 5])
    mid, top = np.minimum(hi, u[:, 6]), np.maximum(hi, u[:, 6])
    low, mid = np.minimum(lo, mid), np.maximum(lo, mid)
    out = np.empty(n, dtype=np.float64)
    for j, w in enumerate((low, mid - low, top - mid, 1.0 - top)):
        out[2 * j * n8:(2 * j + 1) * n8], out[(2 * j + 1) * n8:(2 * j + 2) * n8] = _np_pair(r[:, 7 + j], np.sqrt(r2 * w))
    return out
