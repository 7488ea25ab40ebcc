"""Point estimates and the collapsed likelihood from count matrices (paper §5.1)."""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from fedtopic.errors import ModelError


def phi_from_counts(n_wk: np.ndarray, beta: float) -> np.ndarray:
    """float64[K,V] topic-word distributions Φ_k,w = (N_wk + β) / Σ_f (N_fk + β)   (Eq. 9; Eq. 7 for own counts).

    n_wk: [V,K] word-topic counts (a party's own, or the aggregate N_Σ of Eq. 8).
    """
    if beta <= 0:
        raise ModelError(f"beta must be positive, got {beta}")
    counts = np.asarray(n_wk, dtype=np.float64).T + beta
    return counts / counts.sum(axis=1, keepdims=True)


def theta_from_counts(n_dk: np.ndarray, alpha: float) -> np.ndarray:
    """float64[D,K] document-topic distributions θ_d,k = (N_dk + α) / Σ_s (N_ds + α)   (Eq. 6)."""
    if alpha <= 0:
        raise ModelError(f"alpha must be positive, got {alpha}")
    counts = np.asarray(n_dk, dtype=np.float64) + alpha
    return counts / counts.sum(axis=1, keepdims=True)


def log_joint(n_dk: np.ndarray, n_wk: np.ndarray, alpha: float, beta: float) -> float:
    """Collapsed log p(w, z | α, β) with symmetric priors (Griffiths & Steyvers 2004, Eqs. 2–3).

    log p(w|z) = K[lnΓ(Vβ) − V lnΓ(β)] + Σ_k [Σ_w lnΓ(N_wk + β) − lnΓ(N_k + Vβ)]
    log p(z)   = D[lnΓ(Kα) − K lnΓ(α)] + Σ_d [Σ_k lnΓ(N_dk + α) − lnΓ(N_d + Kα)]
    """
    n_words, n_topics = n_wk.shape
    n_docs = n_dk.shape[0]
    n_k = n_wk.sum(axis=0, dtype=np.int64)
    n_d = n_dk.sum(axis=1, dtype=np.int64)
    log_w = n_topics * (gammaln(n_words * beta) - n_words * gammaln(beta))
    log_w += gammaln(n_wk + beta).sum() - gammaln(n_k + n_words * beta).sum()
    log_z = n_docs * (gammaln(n_topics * alpha) - n_topics * gammaln(alpha))
    log_z += gammaln(n_dk + alpha).sum() - gammaln(n_d + n_topics * alpha).sum()
    return float(log_w + log_z)
