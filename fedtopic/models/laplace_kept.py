"""What survives iFTM's privatisation and threshold (Jiang et al., Eqs. 9–10, §3.1.3), in closed form; light (no
numba), so the algorithm's option checks use it without loading the kernels."""

from __future__ import annotations

import math


def kept_per_token(epsilon: float, tau: float, n_words: int) -> tuple[float, float]:
    """(the chance a token's true word survives, the noise words it keeps): the true entry is 1 + Laplace(1/ε), each
    of the V − 1 others Laplace(1/ε), and an entry is kept when above τ. ε = ∞: (1, 0)."""
    if not math.isfinite(epsilon):
        return 1.0, 0.0
    true = 1.0 - 0.5 * math.exp(-epsilon * (1.0 - tau)) if tau <= 1.0 else 0.5 * math.exp(-epsilon * (tau - 1.0))
    return true, (n_words - 1) * 0.5 * math.exp(-epsilon * tau)
