"""Fixed-point encoding of real vectors for integer-only protections (``mask``): kept apart from the masking.

x float64[n] → q = round(x · 2^f) + M, M = B · 2^f, an integer in [0, 2M] for every |x| ≤ B. The offset makes
the residues non-negative, so the count-oriented ``mask`` scheme carries them unchanged with max_value = 2M;
the sum of c encoded vectors decodes as (Σq − c·M) / 2^f. Defaults f = 32, B = 2^20: M = 2^52, max_value =
2^53, so P parties need bitlength(P · 2^53) + 1 ≤ 64 bits (P ≤ 512).

Precision: each value is off by at most 2^−(f+1) ≈ 1.2e−10 before summing; the sum of c values by at most
c · 2^−(f+1), and the integer sum is exact (no wrap: Σq ≤ P · 2M < 2^63). Overflow: a value with |x| > B is
refused with an error naming its index, never clipped, because a silently clipped update is a wrong model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fedtopic.errors import CryptoError


class FixedPointOverflow(CryptoError):
    """A value is outside the encoding's bound, or not finite."""


@dataclass(frozen=True)
class FixedPoint:
    """f fractional bits and the magnitude bound B (a power of two keeps M exact)."""

    frac_bits: int = 32
    bound: float = float(1 << 20)

    def __post_init__(self) -> None:
        if not 0 <= self.frac_bits <= 52 or not 0 < self.bound or self.offset >= 1 << 61:
            raise ValueError(f"fixed point f={self.frac_bits}, B={self.bound} needs 0 ≤ f ≤ 52 and B·2^f < 2^61")

    @property
    def offset(self) -> int:
        """M = B · 2^f."""
        return int(self.bound * (1 << self.frac_bits))

    @property
    def max_value(self) -> int:
        """The largest encoded value, 2M (the ``mask`` session's max_value)."""
        return 2 * self.offset

    def encode(self, x: np.ndarray) -> np.ndarray:
        """int64[n] in [0, 2M] of x float64[n]; FixedPointOverflow if some |x| > B or x is not finite."""
        x = np.asarray(x, dtype=np.float64)
        bad = ~np.isfinite(x) | (np.abs(x) > self.bound)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise FixedPointOverflow(f"value {x[i]!r} at index {i} is outside the fixed-point bound ±{self.bound:g}")
        return np.rint(x * float(1 << self.frac_bits)).astype(np.int64) + self.offset

    def decode_sum(self, total: np.ndarray, count: int) -> np.ndarray:
        """float64[n] sum of the ``count`` vectors whose encodings add up to ``total`` int64[n]."""
        return (np.asarray(total, dtype=np.int64) - count * self.offset).astype(np.float64) / float(1 << self.frac_bits)
