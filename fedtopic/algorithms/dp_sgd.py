"""DP-SGD across a consortium under secure aggregation: one step's release as an integer vector with a Skellam
share of the noise, its decoding, and its accounting (FedNMF's and gFedNTM's ``dp.distributed``).

Every party samples its documents (Poisson, rate γ), clips each document's gradient to norm C and sends

    u_p = trunc(s·(cos φ/C)·Σ_j ḡ_j) ‖ trunc(s·sin φ·n_p) + Sk(λ) shares + offset,

the clipped gradients and the count of sampled documents in one integer vector whose per-document part has ℓ2 norm
≤ s (s = 2^16, sin φ = 0.1: the count needs little of the budget), a Skellam share per cell sized for the planned
contributors (``privacy.skellam``), and a public offset that keeps every cell non-negative. Only the masked sum over
the consortium is released; every party decodes the same noisy sum Ĝ and count ñ and steps by Ĝ/ñ (the mean
clipped gradient, Abadi et al. 2016).

Accounting, per document of one party: one subsampled Skellam release per step in which the party trains, at the
variance of the contributors that came (Agarwal, Kairouz & Liu 2021, Thm. 3.5; Zhu & Wang 2019, Thm. 6 for
γ < 1). Truncation toward zero moves a coordinate of the sum by < 1 beyond the clipped sum's, so the sensitivities
used are Δ2 = s + √d and Δ1 = s√d + d (d cells): conservative, 0.3 % above s at d = 5·10^4 (docs/privacy.md §3d).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtopic.algorithms.base import Option, OptionValue
from fedtopic.errors import ConfigError, TrainingError
from fedtopic.privacy.rdp import DEFAULT_ORDERS, PrivacyReport, report_from_rdp
from fedtopic.privacy.skellam import (
    bounded_shares,
    composed_rdp,
    planned_contributors,
    share_bound,
    share_lambda,
)

SCALE = 1 << 16
"""s: the fixed-point scale of one document's clipped part (its ℓ2 norm ≤ s)."""
COUNT_SHARE = 0.1
"""sin φ: the part of a document's ℓ2 budget that carries the count of sampled documents."""

DP_SGD_OPTIONS: tuple[Option, ...] = (
    Option("dp.distributed", bool, False, "DP-SGD across the consortium under mask: clipped per-document "
           "gradients, Skellam shares of the noise, only the sum released (docs/privacy.md §3d)"),
    Option("dp.noise_multiplier", float, 1.0, "distributed: σ, the noise of the released sum per unit of one "
           "document's clipped part", minimum=0.0, exclusive_minimum=True),
    Option("dp.sampling_rate", float, 0.05, "distributed: γ, the Poisson rate at which a party samples its "
           "documents each step", minimum=0.0, exclusive_minimum=True, maximum=1.0),
    Option("dp.clip", float, 1.0, "distributed: C, the norm one document's gradient is clipped to",
           minimum=0.0, exclusive_minimum=True),
    Option("dp.delta", float, 1e-5, "distributed: δ of the (ε, δ) reported", minimum=0.0, exclusive_minimum=True,
           maximum=0.5),
    Option("dp.min_contributors", int, None, "distributed: the fewest contributors a released sum may have; the "
           "shares are sized for it and the aggregator releases no step with fewer", minimum=2,
           default_text="every party"),
    Option("dp.max_batch", int, 4096, "distributed: the most documents one party samples in a step (the public "
           "bound of a release's cells); a party whose γ·N_i exceeds half of it is refused", minimum=1),
)


@dataclass(frozen=True)
class DPSGD:
    """The resolved mechanism."""

    sigma: float
    rate: float
    clip: float
    delta: float
    min_contributors: int | None
    max_batch: int

    @classmethod
    def from_options(cls, options: Mapping[str, OptionValue]) -> DPSGD | None:
        """The settings, or None when ``dp.distributed`` is off."""
        if not options.get("dp.distributed"):
            return None
        mc = options.get("dp.min_contributors")
        return cls(float(options["dp.noise_multiplier"]), float(options["dp.sampling_rate"]),  # type: ignore[arg-type]
                   float(options["dp.clip"]), float(options["dp.delta"]),  # type: ignore[arg-type]
                   None if mc is None else int(mc), int(options["dp.max_batch"]))  # type: ignore[arg-type]

    def planned(self, n_parties: int) -> int:
        """The contributors the shares are sized for (ConfigError outside 2..P)."""
        return planned_contributors(self.min_contributors, n_parties)

    def lam(self, planned: int) -> float:
        """λ of one party's Sk(λ) share per cell."""
        return share_lambda(self.sigma, SCALE, planned)

    def offset(self, planned: int) -> int:
        """B, the public offset of every cell."""
        return share_bound(self.lam(planned))

    def max_value(self, planned: int) -> int:
        """The largest cell of any release: 2·s·max_batch + 2B."""
        return 2 * SCALE * self.max_batch + 2 * self.offset(planned)

    def sensitivities(self, cells: int) -> tuple[float, float]:
        """(Δ1, Δ2) of one document's part after truncation (module docstring)."""
        return SCALE * math.sqrt(cells) + cells, SCALE + math.sqrt(cells)

    def check_batch(self, who: str, n_docs: int) -> None:
        """TrainingError when γ·N_i documents a step would exceed half of ``max_batch``."""
        if self.rate * n_docs > self.max_batch / 2:
            raise TrainingError(f"{who}: γ·N_i = {self.rate * n_docs:.0f} documents a step, more than half of "
                                f"dp.max_batch={self.max_batch}")

    def channel_meta(self, cells: int, planned: int) -> dict[str, Any]:
        """The counts channel of int[cells] releases, whose sums the aggregator releases only with ``planned``
        contributors."""
        return {"shape": [cells, 1], "max_value": self.max_value(planned), "min_contributors": planned,
                "setup": True}


def check_distributed_protection(protection: str) -> None:
    """ConfigError unless ``protection`` lets the aggregator see only the sum and carries integer releases."""
    from fedtopic.protections import get_protection

    chosen = get_protection(protection)
    if not (chosen.secure_sum and chosen.carries("counts")):
        raise ConfigError(f"dp.distributed needs a protection under which the aggregator sees only the sum "
                          f"(mask), not {protection!r}: its parties add only a share of the noise")


def release(grad_sum: np.ndarray, sampled: int, dp: DPSGD, planned: int, rng: np.random.Generator) -> np.ndarray:
    """int64[d + 1]: this party's release of ``grad_sum`` (float64, d values, Σ of clipped gradients) and the
    count of ``sampled`` documents, in fixed point with a Skellam share per cell and the offset; every cell in
    [0, max_value]. A share beyond B (p < 1e-30 a cell) withholds it."""
    if sampled > dp.max_batch:
        raise TrainingError(f"{sampled} documents sampled, more than dp.max_batch={dp.max_batch}; raise it")
    cos = math.sqrt(1.0 - COUNT_SHARE**2)
    body = np.trunc(grad_sum.reshape(-1) * (SCALE * cos / dp.clip)).astype(np.int64)
    count = math.trunc(SCALE * COUNT_SHARE * sampled)
    values = np.concatenate([body, [count]])
    shares, bound = bounded_shares(dp.lam(planned), values.shape, rng, "this party")
    return values + shares + SCALE * dp.max_batch + bound  # the offset: s·max_batch for the sign, B for the noise


def decode_sum(total: np.ndarray, contributors: int, dp: DPSGD, planned: int,
               shape: tuple[int, ...]) -> tuple[np.ndarray, float]:
    """(Ĝ float64[shape], ñ): the noisy sum of clipped gradients and the noisy count of sampled documents, from the
    masked sum of ``contributors`` releases."""
    flat = total.reshape(-1).astype(np.float64) - contributors * (SCALE * dp.max_batch + dp.offset(planned))
    cos = math.sqrt(1.0 - COUNT_SHARE**2)
    grad = flat[:-1].reshape(shape) * (dp.clip / (SCALE * cos))
    return grad, flat[-1] / (SCALE * COUNT_SHARE)


def privacy(dp: DPSGD, releases: Sequence[int], planned: int, cells: int,
            orders: Sequence[int] = DEFAULT_ORDERS) -> PrivacyReport:
    """(ε, δ) of this party's ``releases`` (the contributors of every step in which it trained)."""
    l1, l2 = dp.sensitivities(cells)
    rounds = [(dp.rate, 2.0 * c * dp.lam(planned)) for c in releases]
    rdp = composed_rdp(rounds, l1, l2, orders) if rounds else np.zeros(len(orders))
    return report_from_rdp(rdp, orders, dp.delta, [(dp.rate, dp.sigma, len(rounds))])


def privacy_summary(dp: DPSGD, releases: Sequence[int], planned: int, cells: int) -> dict[str, Any]:
    """summary.json's ``privacy`` for a party with these ``releases``."""
    report = privacy(dp, releases, planned, cells)
    return {"epsilon": report.epsilon, "delta": report.delta, "best_order": report.best_order,
            "unit": "one document of this party", "mechanism": "DP-SGD, Skellam shares under mask",
            "releases": len(releases), "sampling_rate": dp.rate, "noise_multiplier": dp.sigma,
            "clip": dp.clip, "planned_contributors": planned, "contributors": list(releases)}
