"""What a finished run's model says about the run that a user should be told: a model whose topics are all one
distribution learnt nothing (it ended where it started: every trainer here starts its topics alike or near)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

SAME = 1e-6
"""Total-variation distance under which two topics count as the same distribution."""


def model_warnings(run_dir: Path) -> list[str]:
    """One line for each thing wrong with ``run_dir``'s model.npz (none when it has no Φ)."""
    path = Path(run_dir) / "model.npz"
    if not path.is_file():
        return []
    with np.load(path) as npz:
        if "phi" not in npz.files:
            return []
        phi = np.asarray(npz["phi"], dtype=np.float64)
    if phi.ndim != 2 or phi.shape[0] < 2:
        return []
    rows = phi / np.maximum(phi.sum(axis=1, keepdims=True), 1e-300)
    spread = 0.5 * float(np.max(np.abs(rows - rows[0]).sum(axis=1)))
    if spread < SAME:
        return [f"all {phi.shape[0]} topics are the same distribution over the words: the model learnt nothing "
                "and ended where it started (too few iterations, a learning rate or noise that swamps the "
                "updates, or documents that share no words)"]
    return []
