"""Rényi DP of the distributed Skellam mechanism (Agarwal, Kairouz & Liu 2021, "The Skellam Mechanism for
Differentially Private Federated Learning", Thm. 3.5), with Poisson subsampling (Zhu & Wang 2019, Thm. 6).

Under secure aggregation every party adds an independent symmetric Skellam share Sk(λ) = Poisson(λ) − Poisson(λ)
(variance 2λ) to its integer update, and only the sum is released. Skellam is closed under summation: the sum of
``c`` shares is Sk(cλ), variance V = 2cλ. So a consortium that plans on at least ``n`` contributors sizes each share
for the central noise the released sum must carry, σ²Δ² = 2nλ, instead of each party adding all of it (local DP,
whose sum carries P times the variance). The released sum with ℓ1 / ℓ2 sensitivities Δ1, Δ2 is (α, ε(α))-RDP with

    ε(α) = α Δ2² / (2V) + min( ((2α − 1) Δ2² + 6 Δ1) / (4V²),  3 Δ1 / (2V) )            (Thm. 3.5, V = 2μ)

whose first term is the Gaussian mechanism's at the same variance (ρ-zCDP with ρ = Δ2²/(2V)) and whose second is
what integer noise costs beyond it (vanishing as V grows). With Poisson subsampling at rate γ < 1 the general bound
of Zhu & Wang (Thm. 6) applies, for integer orders:

    ε_γ(α) = 1/(α−1) log{ (1−γ)^{α−1}(αγ−γ+1) + C(α,2)γ²(1−γ)^{α−2} e^{ε(2)}
                          + 3 Σ_{ℓ=3}^{α} C(α,ℓ)(1−γ)^{α−ℓ}γ^ℓ e^{(ℓ−1)ε(ℓ)} }

(the factor 3 is what a base mechanism other than the Gaussian needs; SUB-LDA's Eq. 3 is this bound without it,
exact for the Gaussian only). Rounds compose by adding RDP order by order, each at the variance of the contributors
that actually came (``c ≥ n``; a round with fewer is not released).

The colluding-parties assumption, stated: a party sees its own share; ``k`` colluding parties (or the aggregator and
``k`` parties) can subtract their ``k`` shares, leaving the others' (c − k)·2λ. Every guarantee here holds against
an adversary that colludes with at most ``c − n`` of the contributors of a round; docs/privacy.md says it too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import gammaln, logsumexp

from fedtopic.errors import PrivacyError
from fedtopic.privacy.rdp import check_orders, check_rate


def skellam_rdp(variance: float, l1: float, l2: float, orders: Sequence[int]) -> np.ndarray:
    """float64[n]: Thm. 3.5's RDP of releasing a sum with Skellam noise of total ``variance`` V (= 2μ) at each order,
    for ℓ1 / ℓ2 sensitivities ``l1`` and ``l2``."""
    if not (variance > 0 and math.isfinite(variance)):
        raise PrivacyError(f"the Skellam noise's variance must be a positive number, got {variance!r}")
    if not (l1 > 0 and l2 > 0):
        raise PrivacyError(f"sensitivities must be positive, got ℓ1 = {l1!r}, ℓ2 = {l2!r}")
    a = check_orders(orders).astype(np.float64)
    gaussian = a * l2**2 / (2.0 * variance)
    integer = np.minimum(((2.0 * a - 1.0) * l2**2 + 6.0 * l1) / (4.0 * variance**2), 3.0 * l1 / (2.0 * variance))
    return gaussian + integer


def subsampled_rdp_general(gamma: float, alpha: int, base: np.ndarray) -> float:
    """Zhu & Wang's Thm. 6 at one integer order α ≥ 2 for any base mechanism whose RDP at ℓ = 2..α is
    ``base[ℓ − 2]``; γ = 1 gives ε(α) itself. Summed in log space."""
    if gamma == 1.0:
        return float(base[alpha - 2])
    log_g, log_1g = math.log(gamma), math.log1p(-gamma)
    terms = [(alpha - 1) * log_1g + math.log(alpha * gamma - gamma + 1.0),
             float(gammaln(alpha + 1) - gammaln(3) - gammaln(alpha - 1)) + 2 * log_g + (alpha - 2) * log_1g
             + float(base[0])]
    for ell in range(3, alpha + 1):
        terms.append(math.log(3.0) + float(gammaln(alpha + 1) - gammaln(ell + 1) - gammaln(alpha - ell + 1))
                     + (alpha - ell) * log_1g + ell * log_g + (ell - 1) * float(base[ell - 2]))
    return float(logsumexp(terms)) / (alpha - 1)


def distributed_round_rdp(gamma: float, variance: float, l1: float, l2: float, orders: Sequence[int]) -> np.ndarray:
    """float64[n]: one released round (subsampling rate γ, total Skellam variance V) at each order, capped by the
    unamplified bound (Google's distributed-DP accounting takes the same minimum)."""
    gamma, arr = check_rate(gamma), check_orders(orders)
    top = int(arr.max())
    base = skellam_rdp(variance, l1, l2, np.arange(2, top + 1))
    plain = skellam_rdp(variance, l1, l2, arr)
    if gamma == 1.0:
        return plain
    return np.minimum(np.array([subsampled_rdp_general(gamma, int(a), base) for a in arr]), plain)


def share_lambda(noise_multiplier: float, sensitivity: float, planned: int) -> float:
    """λ of each party's Sk(λ) share so that ``planned`` shares sum to the central variance (σ·Δ)² = 2·planned·λ."""
    if planned < 1:
        raise PrivacyError(f"the planned contributors must be ≥ 1, got {planned}")
    return (noise_multiplier * sensitivity) ** 2 / (2.0 * planned)


def share_bound(lam: float) -> int:
    """B: a share |Sk(λ)| exceeds it with probability < 1e-30 (Bernstein's inequality for a difference of Poissons,
    P(|X| ≥ t) ≤ 2 exp(−t² / (2(2λ + t/3))), solved for t; at least 40). Updates are offset by B so that they stay
    non-negative under a secure sum of non-negative integers; a draw beyond it stops the release."""
    target = math.log(2.0 / 1e-30)
    t = max(40.0, target / 3.0 + math.sqrt(target**2 / 9.0 + 4.0 * lam * target))  # the root of t² = 2T(2λ + t/3)
    return int(math.ceil(t))


def planned_contributors(asked: int | None, n_parties: int, option: str = "dp.min_contributors") -> int:
    """The contributors the shares are sized for: ``asked`` (the ``option``), default every party; ConfigError
    outside 2..P."""
    from fedtopic.errors import ConfigError

    planned = asked or n_parties
    if not 2 <= planned <= n_parties:
        raise ConfigError(f"{option} must be between 2 and the {n_parties} parties, got {planned}")
    return planned


def bounded_shares(lam: float, size: tuple[int, ...], rng: np.random.Generator, who: str) -> tuple[np.ndarray, int]:
    """(int64[size] Sk(λ) shares, their bound B = ``share_bound(λ)``); a draw beyond B (p < 1e-30 a cell) withholds
    ``who``'s release (TrainingError) rather than clip it."""
    from fedtopic.errors import TrainingError

    shares, bound = skellam_shares(lam, size, rng), share_bound(lam)
    if shares.size and int(np.abs(shares).max()) > bound:
        raise TrainingError(f"{who}: a noise share exceeded its bound {bound}; the release is withheld")
    return shares, bound


def skellam_shares(lam: float, size: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """int64[size]: independent Sk(λ) = Poisson(λ) − Poisson(λ) draws."""
    if lam == 0.0:
        return np.zeros(size, dtype=np.int64)
    return rng.poisson(lam, size).astype(np.int64) - rng.poisson(lam, size).astype(np.int64)


def composed_rdp(rounds: Sequence[tuple[float, float]], l1: float, l2: float, orders: Sequence[int]) -> np.ndarray:
    """float64[n]: RDP of every released round ``(γ, V)`` composed (added order by order)."""
    arr = check_orders(orders)
    total = np.zeros(len(arr))
    cache: dict[tuple[float, float], np.ndarray] = {}
    for gamma, variance in rounds:
        key = (float(gamma), float(variance))
        if key not in cache:
            cache[key] = distributed_round_rdp(gamma, variance, l1, l2, arr)
        total = total + cache[key]
    return total
