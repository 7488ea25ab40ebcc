"""A running Rényi-DP accountant: counts the subsampled-Gaussian steps a run takes and refuses to exceed a budget."""

from __future__ import annotations

from collections.abc import Sequence

from fedtopic.errors import BudgetExhausted, PrivacyError
from fedtopic.privacy.rdp import (
    DEFAULT_ORDERS,
    PrivacyReport,
    check_delta,
    check_orders,
    privacy_report,
    subsampled_gaussian_rdp,
)


class RdpAccountant:
    """Steps of one Poisson-subsampled Gaussian mechanism (rate γ, noise σ), composed over the run.

    ``budget`` (an (ε, δ) ε, Balle conversion at ``delta``) is checked before every step: ``step()`` raises
    ``BudgetExhausted`` when taking it would spend more, so a caller publishes nothing it cannot pay for.
    """

    def __init__(self, gamma: float, sigma: float, delta: float, *, budget: float | None = None,
                 orders: Sequence[int] = DEFAULT_ORDERS, steps: int = 0) -> None:
        self.per_step = subsampled_gaussian_rdp(gamma, sigma, orders)
        self.gamma, self.sigma, self.delta = float(gamma), float(sigma), check_delta(delta)
        self.orders = tuple(int(a) for a in check_orders(orders))
        if budget is not None and not budget > 0:
            raise PrivacyError(f"privacy budget ε must be positive, got {budget}")
        self.budget = budget
        self.steps = steps
        if budget is not None and steps and self.report().epsilon > budget:
            raise BudgetExhausted(f"the privacy budget ε = {budget:g} is already spent "
                                  f"({steps} steps cost ε = {self.report().epsilon:.4g} at δ = {delta:g})")

    def report(self, steps: int | None = None) -> PrivacyReport:
        """What ``steps`` (default: the steps taken) cost."""
        return privacy_report(self.gamma, self.sigma, self.steps if steps is None else steps, self.delta, self.orders)

    def can_step(self) -> bool:
        """Whether one more step stays within the budget."""
        return self.budget is None or self.report(self.steps + 1).epsilon <= self.budget

    def step(self) -> None:
        """Account one more step; BudgetExhausted (nothing counted) if it would exceed the budget."""
        if not self.can_step():
            raise BudgetExhausted(f"privacy budget ε = {self.budget:g} at δ = {self.delta:g} is spent after "
                                  f"{self.steps} steps (one more would cost ε = {self.report(self.steps + 1).epsilon:.4g})")
        self.steps += 1
