"""The differential-privacy mechanism of SUB-LDA (Huang & Chen, Alg. 1) as typed options: light, so the registry
can list them cheaply and the federated LDA algorithms can take the same ``dp`` settings."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from fedtopic.algorithms.base import Option, OptionValue
from fedtopic.errors import ConfigError

DEFAULT_RDP_BUDGET = 2.0  # ε(α) per iteration, the paper's §5.1 setting
DEFAULT_ORDER = 14

DP_OPTIONS: tuple[Option, ...] = (
    Option("sampling_rate", float, 0.5, "Poisson subsampling rate γ per token and iteration (1 = HDP-LDA)",
           minimum=0.0, exclusive_minimum=True, maximum=1.0),
    Option("noise_multiplier", float, None, "σ of the Gaussian noise on every count read (sensitivity 1)",
           minimum=0.0, exclusive_minimum=True, default_text="from rdp_budget and order"),
    Option("rdp_budget", float, None, "per-iteration RDP budget ε(α) of the unsampled mechanism: σ² = α/(2ε(α))",
           minimum=0.0, exclusive_minimum=True, default_text=f"{DEFAULT_RDP_BUDGET} unless noise_multiplier is set"),
    Option("order", int, DEFAULT_ORDER, "the RDP order α of rdp_budget and of the RDP figure reported", minimum=2),
    Option("clip", float, None, "upper clip of a noised count (Alg. 1's clip)", minimum=0.0, exclusive_minimum=True,
           default_text="none"),
    Option("delta", float, 1e-5, "δ of the (ε, δ) reported and of epsilon_budget", minimum=0.0,
           exclusive_minimum=True, maximum=0.5),
    Option("epsilon_budget", float, None, "stop before the (ε, δ) spent would exceed this", minimum=0.0,
           exclusive_minimum=True, default_text="none"),
)
"""Options of the DP mechanism, shared by sub-lda and the dp options of the federated LDA algorithms."""

RELEASE_OPTIONS: tuple[Option, ...] = (
    Option("unit", str, "token", "privacy unit of the releases: one token, or one document (at most "
           "max_doc_tokens of its tokens counted per release)", choices=("token", "document")),
    Option("max_doc_tokens", int, 100, "unit = document: tokens of one document a release counts at most (its "
           "ℓ2 sensitivity)", minimum=1),
)
"""What only a federated party's releases need: the privacy unit and, per document, the contribution bound."""

DISTRIBUTED_OPTIONS: tuple[Option, ...] = (
    Option("distributed", bool, False, "csfed-lda under a secure sum (mask, paillier-packed): every party adds a "
           "Skellam share of the noise and only the sum is released, which carries σ once instead of P times "
           "(docs/privacy.md)"),
    Option("min_contributors", int, None, "distributed: the fewest contributors a released sum may have; the shares "
           "are sized for it and the aggregator releases no round with fewer", minimum=2, default_text="every party"),
)
"""Distributed DP: only the synchronous algorithm whose sum is secure offers it."""


@dataclass(frozen=True)
class DPSettings:
    """The resolved mechanism: rate γ, noise σ, clip, δ, budget, and (v, q) of adaptive subsampling."""

    rate: float
    sigma: float
    order: int
    clip: float | None
    delta: float
    epsilon_budget: float | None
    adaptive: tuple[float, float] | None
    unit: str = "token"
    max_doc_tokens: int = 100
    distributed: bool = False  # Skellam shares of the noise under a secure sum (ddp_party)
    min_contributors: int | None = None  # distributed: the fewest contributors a released sum may have (None: all)

    @property
    def sensitivity(self) -> int:
        """ℓ2 sensitivity of one release: 1 (one token's cell), or max_doc_tokens (one document's cells, worst
        case all in one cell)."""
        return 1 if self.unit == "token" else self.max_doc_tokens

    @property
    def accounted_rate(self) -> float:
        """The largest inclusion probability of any token: γ, or vγ under adaptive subsampling."""
        return self.rate if self.adaptive is None else min(1.0, self.adaptive[0] * self.rate)


def dp_settings(options: Mapping[str, OptionValue]) -> DPSettings:
    """Resolve σ (noise_multiplier, or from rdp_budget at order) and adaptive subsampling's v = 1/(ηq)."""
    sigma, budget, order = options.get("noise_multiplier"), options.get("rdp_budget"), int(options["order"])  # type: ignore[arg-type]
    if sigma is not None and budget is not None:
        raise ConfigError("give noise_multiplier or rdp_budget, not both")
    if sigma is None:
        sigma = math.sqrt(order / (2.0 * float(budget if budget is not None else DEFAULT_RDP_BUDGET)))  # type: ignore[arg-type]
    rate = float(options["sampling_rate"])  # type: ignore[arg-type]
    adaptive = None
    eta = options.get("adaptive_eta")
    if eta is not None:
        q = float(options["adaptive_q"])  # type: ignore[arg-type]
        v = 1.0 / (float(eta) * q)  # type: ignore[arg-type]
        if not 1.0 < v <= 1.0 / rate + 1e-12:
            raise ConfigError(f"adaptive subsampling needs 1 < v = 1/(ηq) ≤ 1/γ; η={eta:g}, q={q:g} give v={v:.4g} "
                              f"at γ={rate:g}")
        adaptive = (v, q)
    clip = options.get("clip")
    budget_eps = options.get("epsilon_budget")
    return DPSettings(rate=rate, sigma=float(sigma), order=order, clip=None if clip is None else float(clip),  # type: ignore[arg-type]
                      delta=float(options["delta"]), epsilon_budget=None if budget_eps is None else float(budget_eps),  # type: ignore[arg-type]
                      adaptive=adaptive, unit=str(options.get("unit", "token")),
                      max_doc_tokens=int(options.get("max_doc_tokens", 100)),  # type: ignore[arg-type]
                      distributed=bool(options.get("distributed", False)),
                      min_contributors=None if options.get("min_contributors") is None else
                      int(options["min_contributors"]))  # type: ignore[arg-type]


def check_one_step_affordable(dp: DPSettings) -> None:
    """A ConfigError when ``epsilon_budget`` cannot pay for even one iteration (a budget spent before it starts)."""
    if dp.epsilon_budget is None:
        return
    from fedtopic.privacy.rdp import privacy_report

    one = privacy_report(dp.accounted_rate, dp.sigma, 1, dp.delta).epsilon
    if one > dp.epsilon_budget:
        raise ConfigError(f"epsilon_budget {dp.epsilon_budget:g} is spent before the first iteration (one costs "
                          f"ε = {one:.4g} at δ = {dp.delta:g}); raise it, or lower sampling_rate or raise the noise")


FEDERATED_DP_OPTIONS: tuple[Option, ...] = (
    Option("dp", bool, False, "publish only differentially private releases (on when any dp.* option is given)"),
) + tuple(Option(**{**o.__dict__, "name": f"dp.{o.name}"}) for o in DP_OPTIONS + RELEASE_OPTIONS)
"""``[algorithm.options] dp = { ... }`` / ``--opt dp.KEY=VALUE`` of csfed-lda and dafed-lda."""

SECURE_SUM_DP_OPTIONS: tuple[Option, ...] = FEDERATED_DP_OPTIONS + tuple(
    Option(**{**o.__dict__, "name": f"dp.{o.name}"}) for o in DISTRIBUTED_OPTIONS)
"""csfed-lda's: the federated ones and distributed DP, which needs the aggregator's secure sum."""


def federated_dp_settings(options: Mapping[str, OptionValue]) -> DPSettings | None:
    """The DP settings of a federated LDA party from its parsed options, or None when ``dp`` is off."""
    if not options.get("dp"):
        return None
    return dp_settings({k.removeprefix("dp."): v for k, v in options.items() if k.startswith("dp.")})


def switch_dp_on(raw: Mapping[str, object], options: dict[str, OptionValue]) -> dict[str, OptionValue]:
    """``options`` with ``dp`` true when any ``dp.*`` key was given; ConfigError if ``dp`` was set false with them."""
    keys = sorted(k for k in raw if k.startswith("dp."))
    if keys and "dp" in raw and options.get("dp") is False:
        raise ConfigError(f"dp = false, but {keys[0]} is given; drop one of them")
    if keys:
        options["dp"] = True
    settings = federated_dp_settings(options)
    if settings is not None:
        check_one_step_affordable(settings)
    return options
