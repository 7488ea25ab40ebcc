"""SUB-LDA's efficiency-privacy analysis: the function I (Eqs. 5–6), its maximiser γ₀ (Lemma 4.1), and the
(ε, δ) bounds of uniform and adaptive subsampling (Lemma 5.1, via Balle et al. 2020 Thm. 13)."""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar

from fedtopic.errors import PrivacyError
from fedtopic.privacy.rdp import check_delta, check_rate, subsampled_gaussian_rdp


def log_efficiency_privacy(gamma: float, sigma: float, order: int) -> float:
    """log I(γ) = log γ + (α−1)·ε_sub(α) (Eq. 6, the constant t·ΣN_d of Eq. 5 dropped); in log space since
    I itself overflows for large α."""
    return math.log(check_rate(gamma)) + (order - 1) * float(subsampled_gaussian_rdp(gamma, sigma, [order])[0])


def efficiency_privacy_curve(gammas: np.ndarray, sigma: float, order: int) -> np.ndarray:
    """float64[n]: I(γ) for each γ (Eq. 6)."""
    return np.exp([log_efficiency_privacy(float(g), sigma, order) for g in gammas])


def efficiency_privacy_argmax(sigma: float, order: int) -> float:
    """γ₀ of Lemma 4.1: I rises on (0, γ₀] and falls on (γ₀, 1]; 1.0 if I rises all the way.

    Found by bounded scalar search on log I over (1e-6, 1], checked against the end point.
    """
    res = minimize_scalar(lambda g: -log_efficiency_privacy(g, sigma, order), bounds=(1e-6, 1.0), method="bounded",
                          options={"xatol": 1e-10})
    g0 = float(res.x)
    return 1.0 if log_efficiency_privacy(1.0, sigma, order) >= log_efficiency_privacy(g0, sigma, order) else g0


def uniform_subsampling_dp(epsilon: float, delta: float, gamma: float) -> tuple[float, float]:
    """(ε', δ') of an (ε, δ)-DP mechanism after Poisson subsampling at γ: log(1 + γ(e^ε − 1)), γδ (Eq. 19)."""
    check_rate(gamma)
    check_delta(delta)
    if not epsilon >= 0:
        raise PrivacyError(f"ε must be ≥ 0, got {epsilon}")
    return math.log1p(gamma * math.expm1(epsilon)), gamma * delta


def adaptive_subsampling_dp(epsilon: float, delta: float, gamma: float, eta: float, q: float) -> dict[str, float]:
    """Lemma 5.1 for adaptive subsampling with η = 1/(vq): the exact Eq. 20 values at rate vγ and Eq. 13's bound.

    Returns ``epsilon`` = log(1 + vγ(e^ε − 1)), ``delta`` = vγδ, and ``epsilon_bound`` = ε' − log(ηq),
    ``delta_bound`` = γδ/(ηq) with ε', δ' of uniform subsampling at γ (Eq. 19).
    """
    if not (eta > 0 and 0 < q <= 1):
        raise PrivacyError(f"adaptive subsampling needs η > 0 and q in (0, 1], got η={eta}, q={q}")
    v = 1.0 / (eta * q)
    if not 1.0 < v <= 1.0 / gamma:
        raise PrivacyError(f"adaptive subsampling needs 1 < v = 1/(ηq) ≤ 1/γ, got v={v:g} at γ={gamma:g}")
    eps_u, _ = uniform_subsampling_dp(epsilon, delta, gamma)
    eps_a, delta_a = uniform_subsampling_dp(epsilon, delta, v * gamma)
    return {"v": v, "epsilon": eps_a, "delta": delta_a, "epsilon_bound": eps_u - math.log(eta * q),
            "delta_bound": gamma * delta / (eta * q)}
