"""``alpha_at(alpha, k)``: α_k as the numba kernels read it, for a symmetric (float) or learned (float64[K]) α.

Chosen when the kernel is compiled: a symmetric run compiles and computes exactly as before (same bits, same
speed) and an asymmetric one pays one load per topic.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload


def alpha_at(alpha, k):
    """α_k: alpha itself for a float, alpha[k] for an array (this body runs outside numba only)."""
    return alpha[k] if isinstance(alpha, np.ndarray) else alpha


@overload(alpha_at, inline="always")
def _alpha_at(alpha, k):
    if isinstance(alpha, types.Array):
        return lambda alpha, k: alpha[k]
    return lambda alpha, k: alpha
