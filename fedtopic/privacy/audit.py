"""An empirical privacy audit of a DP party's published releases (Jagielski, Ullman & Oprea 2020 style).

Two neighbouring corpora differ in one canary token whose word occurs nowhere
else. The published mechanism (a DP party's genesis release and the releases of
its next rounds, exactly what CSFed/DAFed publish) is run ``runs`` times on each,
with fresh seeds. The distinguisher scores a run by the canary word's row of the
releases, summed over topics and releases: the canary can only show there. A
threshold picked on the first half of the runs is evaluated on the second half;
Clopper–Pearson upper bounds (at ``confidence``, split over both error rates) on
its false-positive and false-negative rates turn into the lower bound

    ε_lb = max( log((1 − δ − FNR⁺)/FPR⁺), log((1 − δ − FPR⁺)/FNR⁺) )

which holds with probability ≥ ``confidence`` for any (ε, δ)-DP mechanism. It
must stay below the accountant's ε; with the noise switched off it must be large
(the audit can catch a broken mechanism).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta as beta_dist

from fedtopic.errors import PrivacyError


def clopper_pearson_upper(errors: int, trials: int, alpha: float) -> float:
    """One-sided upper confidence bound at level 1 − alpha on a rate with ``errors`` of ``trials``."""
    if errors >= trials:
        return 1.0
    return float(beta_dist.ppf(1.0 - alpha, errors + 1, trials - errors))


def epsilon_lower_bound(fpr_upper: float, fnr_upper: float, delta: float) -> float:
    """The ε that an (ε, δ)-DP mechanism must have for a test with these error rates to exist (0 if none)."""
    bounds = [0.0]
    for a, b in ((fnr_upper, fpr_upper), (fpr_upper, fnr_upper)):
        if b > 0 and 1.0 - delta - a > b:
            bounds.append(math.log((1.0 - delta - a) / b))
    return max(bounds)


@dataclass(frozen=True)
class AuditResult:
    """Scores of the runs with and without the canary, the threshold test's error rates, and ε_lb."""

    runs: int
    threshold: float
    false_positive_rate: float
    false_negative_rate: float
    epsilon_lower_bound: float
    confidence: float
    delta: float

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def threshold_audit(with_canary: np.ndarray, without: np.ndarray, *, delta: float,
                    confidence: float = 0.95) -> AuditResult:
    """ε_lb from the scores of runs with and without the canary (higher score: "the canary is in")."""
    n = min(len(with_canary), len(without))
    if n < 20:
        raise PrivacyError(f"an audit needs at least 20 runs on each side, got {n}")
    half = n // 2
    pick_in, test_in = with_canary[:half], with_canary[half:n]
    pick_out, test_out = without[:half], without[half:n]
    candidates = np.unique(np.concatenate([pick_in, pick_out]))
    alpha = (1.0 - confidence) / 2.0  # both rates hold jointly (union bound)

    def bound(t: float, scores_in: np.ndarray, scores_out: np.ndarray) -> tuple[float, float, float]:
        fp, fn = int((scores_out > t).sum()), int((scores_in <= t).sum())
        fpr, fnr = clopper_pearson_upper(fp, len(scores_out), alpha), clopper_pearson_upper(fn, len(scores_in), alpha)
        return epsilon_lower_bound(fpr, fnr, delta), fp / len(scores_out), fn / len(scores_in)

    best = max(candidates, key=lambda t: bound(float(t), pick_in, pick_out)[0])
    eps, fpr, fnr = bound(float(best), test_in, test_out)
    return AuditResult(runs=n, threshold=float(best), false_positive_rate=fpr, false_negative_rate=fnr,
                       epsilon_lower_bound=eps, confidence=confidence, delta=delta)


def run_scores(mechanism: Callable[[int], np.ndarray], runs: int, seed: int) -> np.ndarray:
    """float64[runs]: ``mechanism(seed + i)`` for i < runs (each call returns the run's score)."""
    return np.array([mechanism(seed + i) for i in range(runs)], dtype=np.float64)
