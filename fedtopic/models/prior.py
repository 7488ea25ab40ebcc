"""The document-topic prior α: one number (symmetric Dir(α)) or one per topic (asymmetric, learned by
``models.hyperopt``); the kernels read it through ``models._alpha_at``. No numba here: light to import.
"""

from __future__ import annotations

import numpy as np

from fedtopic.errors import ModelError

Alpha = float | np.ndarray
"""α: a float (symmetric) or float64[K] (asymmetric)."""

LEARNED_ALPHA_START = 0.1
"""α per topic where learning starts when none is given: tomotopy's default. From the paper's 50/K the assignments
drawn under that smoothing pull the learned α down only slowly (docs/RESULTS.md "Learned priors": 3 % worse
held-out perplexity than tomotopy after 300 sweeps on short documents, 2 % better from 0.1)."""


def default_alpha(n_topics: int, learned: bool) -> float:
    """α when none is given: the paper's 50/K (§8.1), or ``LEARNED_ALPHA_START`` where it is learned."""
    return LEARNED_ALPHA_START if learned else 50.0 / n_topics


def check_alpha(alpha: Alpha, n_topics: int, where: str = "alpha") -> Alpha:
    """α as the kernels take it: a positive finite float, or a C-contiguous float64[K] of them; ModelError else."""
    if np.ndim(alpha) == 0:
        value = float(alpha)
        if not (np.isfinite(value) and value > 0):
            raise ModelError(f"{where}: alpha must be positive, got {alpha}")
        return value
    vector = np.ascontiguousarray(alpha, dtype=np.float64)
    if vector.shape != (n_topics,):
        raise ModelError(f"{where}: an asymmetric alpha needs one value per topic ({n_topics}), got shape "
                         f"{vector.shape}")
    if not (np.all(np.isfinite(vector)) and vector.min() > 0):
        raise ModelError(f"{where}: every alpha must be positive and finite")
    return vector


def alpha_total(alpha: Alpha, n_topics: int) -> float:
    """Σ_k α_k: K·α for a symmetric prior (the product the kernels always used), the sum otherwise."""
    return n_topics * float(alpha) if np.ndim(alpha) == 0 else float(np.sum(alpha))


def alpha_vector(alpha: Alpha, n_topics: int) -> np.ndarray:
    """float64[K] α_k for every topic."""
    return np.full(n_topics, float(alpha)) if np.ndim(alpha) == 0 else np.asarray(alpha, dtype=np.float64)


def is_symmetric(alpha: Alpha) -> bool:
    return np.ndim(alpha) == 0


def describe_alpha(alpha: Alpha) -> str:
    """'0.1' for a symmetric prior, 'learned, 0.02–0.41 (Σ 1.3)' for an asymmetric one."""
    if is_symmetric(alpha):
        return f"{float(alpha):g}"
    vector = np.asarray(alpha)
    return f"learned, {vector.min():.3g}–{vector.max():.3g} (Σ {vector.sum():.3g})"


def alpha_json(alpha: Alpha) -> float | list[float]:
    """α for a JSON file: the float, or the list of K floats."""
    return float(alpha) if is_symmetric(alpha) else [float(a) for a in np.asarray(alpha)]
