"""FedNMF with distributed differential privacy (``--opt dp.distributed=true``): DP-SGD across the consortium,
with only the masked sum of the parties' noisy releases ever seen (beyond the FedNMF+MI paper).

The paper's ClientUpdate runs local epochs, whose result depends on every document at once: no per-document bound
holds for it. Under DP every round is one step of DP-SGD (Abadi et al. 2016) taken by the consortium together:

- each party draws a Poisson sample of its documents at rate γ (``dp.sampling_rate``); document j's gradient of
  Eq. 1 in W is the rank-one g_j = −2 r_j h_jᵀ (r_j = a_j − W h_j, ‖g_j‖_F = 2‖r_j‖‖h_j‖), clipped to norm C
  (``dp.clip``);
- its release is u_p = trunc(s·(cos φ/C)·Σ_j ḡ_j) ‖ s·sin φ·n_p, i.e. the clipped gradients and the count of
  sampled documents in one integer vector whose per-document part has ℓ2 norm ≤ s (sin φ = 0.1: the count needs
  little of the budget), plus a Skellam share per cell sized for the planned contributors and the public offset B
  (``fedtopic.privacy.skellam``, as csfed-lda's distributed DP);
- the sum over the consortium (every party sends a share each round, selected to train or not) is the release:
  the mean clipped gradient Ĝ/ñ steps W by the server rule with pseudo-gradient Δ = −lr·Ĝ/ñ, projected on W ≥ 0;
- H_i never leaves its party: each round every h_j takes one projected step on its own term against the new W
  (Eq. 1 restricted to h_j, as in ``nmf_sgd``), which no release depends on except through g_j of a sampled j.

Accounting, per document of one party: one subsampled Skellam release per round in which the party trains, at the
variance of the contributors that actually came (Agarwal, Kairouz & Liu 2021, Thm. 3.5; Zhu & Wang 2019, Thm. 6 for
γ < 1). Truncation toward zero can move a coordinate of the sum by < 1 beyond the clipped sum's, so the
sensitivities used are Δ2 = s + √d and Δ1 = s√d + d (d = V·k + 1 cells): conservative, and 0.3 % above s at
s = 2^16, V·k = 5·10^4. The SMILE term (λ > 0) is refused under DP: its critic θ would need its own clipped
release. The colluding-parties assumption of distributed DP holds (docs/privacy.md §3b).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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

NMF_DP_OPTIONS: tuple[Option, ...] = (
    Option("dp.distributed", bool, False, "DP-SGD across the consortium under mask: one clipped gradient step a "
           "round, Skellam shares of the noise, only the sum released (docs/privacy.md §3d)"),
    Option("dp.noise_multiplier", float, 1.0, "distributed: σ, the noise of the released sum per unit of one "
           "document's clipped part", minimum=0.0, exclusive_minimum=True),
    Option("dp.sampling_rate", float, 0.05, "distributed: γ, the Poisson rate at which a party samples its "
           "documents each round", minimum=0.0, exclusive_minimum=True, maximum=1.0),
    Option("dp.clip", float, 1.0, "distributed: C, the Frobenius norm one document's gradient in W is clipped to",
           minimum=0.0, exclusive_minimum=True),
    Option("dp.delta", float, 1e-5, "distributed: δ of the (ε, δ) reported", minimum=0.0, exclusive_minimum=True,
           maximum=0.5),
    Option("dp.min_contributors", int, None, "distributed: the fewest contributors a released sum may have; the "
           "shares are sized for it and the aggregator releases no round with fewer", minimum=2,
           default_text="every party"),
    Option("dp.max_batch", int, 4096, "distributed: the most documents one party samples in a round (the public "
           "bound of a release's cells); a party whose γ·N_i exceeds half of it is refused", minimum=1),
)


@dataclass(frozen=True)
class NMFDP:
    """The resolved mechanism."""

    sigma: float
    rate: float
    clip: float
    delta: float
    min_contributors: int | None
    max_batch: int

    @classmethod
    def from_options(cls, options: Mapping[str, OptionValue]) -> NMFDP | None:
        """The settings, or None when ``dp.distributed`` is off; ConfigError when λ > 0 (SMILE) is asked too."""
        if not options.get("dp.distributed"):
            return None
        if float(options.get("mi_weight", 0.0)) > 0:  # type: ignore[arg-type]
            raise ConfigError("dp.distributed trains plain FedNMF: set mi_weight=0 (the SMILE critic θ would need a "
                              "clipped release of its own)")
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


def clipped_gradient_sum(counts: np.ndarray, w: np.ndarray, h: np.ndarray, clip: float) -> np.ndarray:
    """float64[V, k]: Σ_j ḡ_j over the rows of ``counts`` (float[B, V], the sampled documents), ``h`` their
    float[B, k], ḡ_j = g_j·min(1, C/‖g_j‖_F), g_j = −2 (a_j − W h_j) h_jᵀ."""
    resid = counts - h @ w.T  # [B, V]
    norms = 2.0 * np.linalg.norm(resid, axis=1) * np.linalg.norm(h, axis=1)
    factor = np.minimum(1.0, clip / np.maximum(norms, 1e-300))
    return -2.0 * (resid * factor[:, None]).T @ h


def release(grad_sum: np.ndarray, sampled: int, dp: NMFDP, planned: int, rng: np.random.Generator) -> np.ndarray:
    """int64[V·k + 1]: this party's release (clipped gradient sum and count in fixed point, a Skellam share per
    cell and the offset B); every cell in [0, max_value]. A share beyond B (p < 1e-30 a cell) withholds it."""
    if sampled > dp.max_batch:
        raise TrainingError(f"{sampled} documents sampled, more than dp.max_batch={dp.max_batch}; raise it")
    cos = math.sqrt(1.0 - COUNT_SHARE**2)
    body = np.trunc(grad_sum.reshape(-1) * (SCALE * cos / dp.clip)).astype(np.int64)
    count = math.trunc(SCALE * COUNT_SHARE * sampled)
    values = np.concatenate([body, [count]])
    shares, bound = bounded_shares(dp.lam(planned), values.shape, rng, "this party")
    return values + shares + SCALE * dp.max_batch + bound  # the offset: s·max_batch for the sign, B for the noise


def decode_sum(total: np.ndarray, contributors: int, dp: NMFDP, planned: int,
               shape: tuple[int, int]) -> tuple[np.ndarray, float]:
    """(Ĝ float64[V, k], ñ): the noisy sum of clipped gradients and the noisy count of sampled documents, from
    the masked sum of ``contributors`` releases."""
    flat = total.reshape(-1).astype(np.float64) - contributors * (SCALE * dp.max_batch + dp.offset(planned))
    cos = math.sqrt(1.0 - COUNT_SHARE**2)
    grad = flat[:-1].reshape(shape) * (dp.clip / (SCALE * cos))
    return grad, flat[-1] / (SCALE * COUNT_SHARE)


def privacy(dp: NMFDP, releases: Sequence[int], planned: int, cells: int,
            orders: Sequence[int] = DEFAULT_ORDERS) -> PrivacyReport:
    """(ε, δ) of this party's ``releases`` (the contributors of every round in which it trained)."""
    l1, l2 = dp.sensitivities(cells)
    rounds = [(dp.rate, 2.0 * c * dp.lam(planned)) for c in releases]
    rdp = composed_rdp(rounds, l1, l2, orders) if rounds else np.zeros(len(orders))
    return report_from_rdp(rdp, orders, dp.delta, [(dp.rate, dp.sigma, len(rounds))])
