"""Input checks shared by the evaluation functions (each raises EvalError with one line)."""

from __future__ import annotations

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.errors import EvalError


def check_distributions(x: np.ndarray, name: str) -> np.ndarray:
    """``x`` as float64[rows, cols] whose rows are probability distributions (finite, ≥ 0, summing to 1)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise EvalError(f"{name} must be a non-empty 2-D matrix, got shape {x.shape}")
    if not np.all(np.isfinite(x)) or (x < 0).any():
        raise EvalError(f"{name} has negative or non-finite entries")
    if not np.allclose(x.sum(axis=1), 1.0, rtol=0, atol=1e-6):
        raise EvalError(f"every row of {name} must sum to 1")
    return x


def check_phi(phi: np.ndarray, where: str) -> np.ndarray:
    """Φ as float64[K,V]: finite, non-negative, rows summing to 1."""
    return check_distributions(phi, f"{where}: phi")


def check_corpus_for_phi(phi: np.ndarray, corpus: Corpus, where: str) -> None:
    """The corpus is non-empty and indexes the same vocabulary as Φ."""
    if corpus.n_tokens == 0:
        raise EvalError(f"{where}: the corpus has no tokens")
    if corpus.n_words != phi.shape[1]:
        raise EvalError(
            f"{where}: corpus vocabulary has {corpus.n_words} words but phi has V={phi.shape[1]}"
        )
    if corpus.words.min() < 0 or corpus.words.max() >= phi.shape[1]:
        raise EvalError(f"{where}: word index outside [0, {phi.shape[1]})")


def check_alpha(alpha: float | np.ndarray, where: str) -> float | np.ndarray:
    """A finite positive Dirichlet concentration, or float64[K] of them (a learned asymmetric α)."""
    if np.ndim(alpha) == 0:
        if not (np.isfinite(alpha) and alpha > 0):
            raise EvalError(f"{where}: alpha must be > 0, got {alpha}")
        return float(alpha)
    vector = np.asarray(alpha, dtype=np.float64)
    if vector.ndim != 1 or vector.size == 0 or not (np.all(np.isfinite(vector)) and vector.min() > 0):
        raise EvalError(f"{where}: alpha must be positive numbers, one per topic")
    return vector
