"""Rényi-DP of the Poisson-subsampled Gaussian mechanism, its composition, and conversion to (ε, δ)-DP.

SUB-LDA (Huang & Chen) Eq. 3, Theorem 3.1 (Zhu & Wang 2019, Poisson-subsampled
RDP) for integer orders α ≥ 2:

    ε_sub(α) = 1/(α−1) · log{ (1−γ)^{α−1}(αγ − γ + 1) + Σ_{ℓ=2}^{α} C(α,ℓ)(1−γ)^{α−ℓ} γ^ℓ e^{(ℓ−1)ε(ℓ)} }

with the base mechanism's RDP ε(ℓ). This is Zhu & Wang's bound *without* its
factor 3, which is exact (not just an upper bound) for the Gaussian mechanism,
ε(ℓ) = ℓ/(2σ²) at ℓ2-sensitivity 1 (Mironov, Talwar & Zhang 2019): then the
first term is the ℓ = 0 and ℓ = 1 terms of their A_α. Everything is computed in
log space (log-sum-exp over ℓ), so α = 256 or γ = 1e-4 neither overflow nor
underflow. γ = 1 gives ε(α) itself (no amplification: HDP-LDA).

Composition over T iterations adds RDP order by order (Mironov 2017, Prop. 1).
Conversions of an RDP curve to (ε, δ)-DP, minimised over the orders given:

* ``classic``: ε = ε_RDP(α) + log(1/δ)/(α−1) (Mironov 2017, Prop. 3);
* ``balle``: ε = ε_RDP(α) + log((α−1)/α) − (log δ + log α)/(α−1) (Balle et al.
  2020, "Hypothesis testing interpretations and Rényi DP", Thm. 21; also
  Canonne, Kamath & Steinke 2020), tighter for every α > 1; and ε = 0 where
  δ ≥ √(1 − e^{−ε_RDP(α)}) already (KL bound; ε_RDP(α) ≥ KL).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln, logsumexp

from fedtopic.errors import PrivacyError

DEFAULT_ORDERS: tuple[int, ...] = tuple(range(2, 65)) + (72, 80, 96, 128, 160, 192, 224, 256)
"""Integer orders the accountant tracks unless told otherwise."""

CONVERSIONS = ("balle", "classic")


def check_rate(gamma: float) -> float:
    """γ as a float, or a PrivacyError unless 0 < γ ≤ 1."""
    if not (isinstance(gamma, (int, float)) and 0.0 < gamma <= 1.0):
        raise PrivacyError(f"sampling rate γ must be in (0, 1], got {gamma}")
    return float(gamma)


def check_sigma(sigma: float) -> float:
    """σ as a float, or a PrivacyError unless 0 < σ < ∞."""
    if not (isinstance(sigma, (int, float)) and 0.0 < sigma < math.inf):
        raise PrivacyError(f"noise multiplier σ must be a positive finite number, got {sigma}")
    return float(sigma)


def check_delta(delta: float) -> float:
    """δ as a float, or a PrivacyError unless 0 < δ < 1."""
    if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
        raise PrivacyError(f"δ must be in (0, 1), got {delta}")
    return float(delta)


def check_orders(orders: Sequence[int]) -> np.ndarray:
    """int64[n] of distinct integer orders ≥ 2 (Eq. 3 is for integer α), or a PrivacyError."""
    arr = np.asarray(list(orders))
    if arr.size == 0 or arr.ndim != 1 or not np.all(np.equal(np.mod(arr, 1), 0)) or arr.min() < 2:
        raise PrivacyError(f"orders must be integers ≥ 2, got {list(orders)}")
    if len(set(arr.tolist())) != arr.size:
        raise PrivacyError("orders must be distinct")
    return arr.astype(np.int64)


def sigma_for_budget(epsilon: float, order: int) -> float:
    """σ of the Gaussian mechanism with RDP ε at order α: σ² = α / (2ε) (SUB-LDA §4.1)."""
    if not (isinstance(epsilon, (int, float)) and 0.0 < epsilon < math.inf):
        raise PrivacyError(f"per-iteration RDP budget ε(α) must be positive, got {epsilon}")
    check_orders([order])
    return math.sqrt(order / (2.0 * epsilon))


def gaussian_rdp(sigma: float, orders: Sequence[int]) -> np.ndarray:
    """float64[n]: RDP ε(α) = α/(2σ²) of the Gaussian mechanism with sensitivity 1 at each order."""
    return check_orders(orders) / (2.0 * check_sigma(sigma) ** 2)


def _log_binom(n: int, k: np.ndarray) -> np.ndarray:
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def subsampled_rdp_order(gamma: float, alpha: int, base: np.ndarray) -> float:
    """Eq. 3 at one integer order α, given the base mechanism's RDP ``base[ℓ-2]`` = ε(ℓ) ≥ 0 for ℓ = 2..α.

    Eq. 3's braces hold A = Σ_ℓ C(α,ℓ)(1−γ)^{α−ℓ}γ^ℓ e^{(ℓ−1)ε(ℓ)} (its first term is ℓ = 0 and 1). Since the
    binomial weights sum to 1, A − 1 = Σ_{ℓ≥2} C(α,ℓ)(1−γ)^{α−ℓ}γ^ℓ (e^{(ℓ−1)ε(ℓ)} − 1), a sum of non-negative
    terms: it is summed in log space and ε = log1p(A − 1)/(α − 1). Unlike log A summed directly, this keeps
    full relative precision where ε is tiny (γ = 1e-4, large σ) and cannot overflow where it is huge.
    """
    if gamma == 1.0:
        return float(base[alpha - 2])
    ells = np.arange(2, alpha + 1)
    growth = (ells - 1) * base[: alpha - 1]
    if not np.any(growth > 0):
        return 0.0
    big = growth > 30.0
    log_growth = np.empty_like(growth)
    log_growth[big] = growth[big] + np.log1p(-np.exp(-growth[big]))  # log(e^g − 1) without overflow
    with np.errstate(divide="ignore"):  # ε(ℓ) = 0 gives −∞: the term is absent
        log_growth[~big] = np.log(np.expm1(growth[~big]))
    terms = _log_binom(alpha, ells) + (alpha - ells) * math.log1p(-gamma) + ells * math.log(gamma) + log_growth
    log_a_minus_1 = float(logsumexp(terms))
    return float(np.logaddexp(0.0, log_a_minus_1) if log_a_minus_1 > -30 else math.log1p(math.exp(log_a_minus_1))) / (alpha - 1)


def subsampled_gaussian_rdp(gamma: float, sigma: float, orders: Sequence[int]) -> np.ndarray:
    """float64[n]: RDP of one Poisson-subsampled Gaussian step (Eq. 3 with ε(ℓ) = ℓ/(2σ²)) at each order."""
    gamma, sigma, arr = check_rate(gamma), check_sigma(sigma), check_orders(orders)
    base = np.arange(2, int(arr.max()) + 1) / (2.0 * sigma**2)
    return np.array([subsampled_rdp_order(gamma, int(a), base) for a in arr])


def epsilon_from_rdp(rdp: np.ndarray, orders: Sequence[int], delta: float,
                     conversion: str = "balle") -> tuple[float, int]:
    """(ε, best order) of (ε, δ)-DP implied by an RDP curve, minimised over ``orders``."""
    delta, arr = check_delta(delta), check_orders(orders).astype(np.float64)
    rdp = np.asarray(rdp, dtype=np.float64)
    if conversion == "classic":
        eps = rdp + math.log(1.0 / delta) / (arr - 1.0)
    elif conversion == "balle":
        eps = rdp + np.log1p(-1.0 / arr) - (math.log(delta) + np.log(arr)) / (arr - 1.0)
        eps = np.where(delta**2 + np.expm1(-rdp) > 0.0, 0.0, eps)
    else:
        raise PrivacyError(f"conversion must be one of {', '.join(CONVERSIONS)}, got {conversion!r}")
    i = int(np.argmin(eps))
    return max(0.0, float(eps[i])), int(arr[i])


@dataclass(frozen=True)
class PrivacyReport:
    """What a run spent: T steps of a subsampled Gaussian, RDP per order, and (ε, δ) both ways."""

    sampling_rate: float
    noise_multiplier: float
    steps: int
    delta: float
    orders: tuple[int, ...]
    rdp: tuple[float, ...]  # composed over the steps
    epsilon: float  # Balle et al. 2020
    best_order: int
    epsilon_classic: float
    best_order_classic: int
    mechanisms: tuple[tuple[float, float, int], ...] = ()  # (γ, σ, steps) of every composed part


    def rdp_at(self, order: int) -> float:
        """Composed RDP at one tracked order."""
        if order not in self.orders:
            raise PrivacyError(f"order {order} is not tracked; tracked: {self.orders[0]}..{self.orders[-1]}")
        return self.rdp[self.orders.index(order)]

    def as_dict(self) -> dict:
        return {"sampling_rate": self.sampling_rate, "noise_multiplier": self.noise_multiplier, "steps": self.steps,
                "delta": self.delta, "epsilon": self.epsilon, "best_order": self.best_order,
                "conversion": "Balle et al. 2020 (Thm. 21)", "epsilon_classic": self.epsilon_classic,
                "best_order_classic": self.best_order_classic,
                "mechanisms": [{"sampling_rate": g, "noise_multiplier": s, "steps": n} for g, s, n in self.mechanisms],
                "rdp": {str(a): r for a, r in zip(self.orders, self.rdp)}}


def privacy_report(gamma: float, sigma: float, steps: int, delta: float,
                   orders: Sequence[int] = DEFAULT_ORDERS) -> PrivacyReport:
    """The accountant's answer for ``steps`` compositions of one subsampled Gaussian step."""
    return privacy_report_mixed([(gamma, sigma, steps)], delta, orders)


def report_from_rdp(rdp: np.ndarray, orders: Sequence[int], delta: float,
                    mechanisms: Sequence[tuple[float, float, int]]) -> PrivacyReport:
    """A ``PrivacyReport`` for a composed RDP curve (the first mechanism names γ, σ and the step count)."""
    arr = check_orders(orders)
    eps, order = epsilon_from_rdp(rdp, arr, delta, "balle")
    eps_c, order_c = epsilon_from_rdp(rdp, arr, delta, "classic")
    gamma, sigma, steps = mechanisms[0]
    return PrivacyReport(float(gamma), float(sigma), int(steps), float(delta), tuple(int(a) for a in arr),
                         tuple(float(r) for r in rdp), eps, order, eps_c, order_c,
                         tuple((float(g), float(s), int(n)) for g, s, n in mechanisms))


def privacy_report_mixed(mechanisms: Sequence[tuple[float, float, int]], delta: float,
                         orders: Sequence[int] = DEFAULT_ORDERS) -> PrivacyReport:
    """The composition of ``steps`` Poisson-subsampled Gaussian steps for every (γ, σ, steps) given."""
    if not mechanisms:
        raise PrivacyError("nothing to account")
    arr = check_orders(orders)
    rdp = np.zeros(len(arr))
    for gamma, sigma, steps in mechanisms:
        if not (isinstance(steps, (int, np.integer)) and steps >= 0):
            raise PrivacyError(f"steps must be a non-negative integer, got {steps}")
        rdp = rdp + (steps * subsampled_gaussian_rdp(gamma, sigma, arr) if steps else 0.0)
    return report_from_rdp(rdp, arr, delta, mechanisms)
