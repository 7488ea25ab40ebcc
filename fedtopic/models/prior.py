"""The document-topic prior α: one number (symmetric Dir(α)) or one per topic (asymmetric, learned by
``models.hyperopt``); the kernels read it through ``models._alpha_at``. No numba here: light to import.
"""

from __future__ import annotations

import numpy as np

from fedtopic.errors import ModelError

Alpha = float | np.ndarray
"""α: a float (symmetric) or float64[K] (asymmetric)."""

DEFAULT_ALPHA = 0.1
"""α per topic when none is given, fixed or where learning starts: tomotopy's. Measured against the CSFed/DAFed
paper's 50/K (§8.1) on every built-in dataset at K 4, 20 and 50 (docs/results/samplers.md "The default α",
benchmarks/bench_alpha_default.py): held-out perplexity 0.87× 50/K's (median of 24), NPMI +0.026 and SVM
macro-F1 on θ +0.035. 50/K smooths θ of short documents towards uniform (issue 66: K 4, α 12.5 scored "a goal
from a penalty in the cup final" 0.31 football); as a start for learning it pulls the learned α down only slowly
(docs/results/samplers.md "Learned priors"). The paper's experiments keep 50/K (``paper_alpha``)."""


def paper_alpha(n_topics: int) -> float:
    """The CSFed/DAFed paper's α = 50/K (§8.1), which the commands that reproduce its figures give."""
    return 50.0 / n_topics


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
