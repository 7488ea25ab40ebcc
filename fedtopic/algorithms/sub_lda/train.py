"""SUB-LDA's training loop (Alg. 1's outer loop): DP sweeps, the accountant, Eq. 9's stopping rule."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedtopic.algorithms.base import Fitted, IterationCallback, TrainSpec
from fedtopic.algorithms.lda.dp_options import DPSettings
from fedtopic.algorithms.model import TopicModel
from fedtopic.corpus.pool import merge_corpora
from fedtopic.corpus.types import Corpus
from fedtopic.errors import BudgetExhausted
from fedtopic.models.dp_lda import DPGibbsLDA
from fedtopic.privacy.accountant import RdpAccountant
from fedtopic.privacy.rdp import DEFAULT_ORDERS


class ConvergenceRule:
    """Eq. 9: converged once D_i = |per_i − per_{i−1}| ≤ D̂ for ``window`` consecutive iterations i.

    per_i is the training perplexity exp(−log p(w, z)/N) of the collapsed joint after iteration i (the paper
    does not say which perplexity; this one is computed from the counts alone, with no extra sampling).
    """

    def __init__(self, tol: float, window: int) -> None:
        self.tol, self.window = tol, window
        self.last: float | None = None
        self.run = 0

    def update(self, perplexity: float) -> bool:
        """Feed per_i; True when the rule holds."""
        if self.last is not None and abs(perplexity - self.last) <= self.tol:
            self.run += 1
        else:
            self.run = 0
        self.last = perplexity
        return self.run >= self.window


class SubLDATrainer:
    """The model in training as iteration callbacks see it: ``phi()``, ``log_likelihood()``, ``privacy()``."""

    def __init__(self, model: DPGibbsLDA, accountant: RdpAccountant) -> None:
        self.model, self.accountant = model, accountant

    def phi(self) -> np.ndarray:
        return self.model.phi()

    def log_likelihood(self) -> float:
        return self.model.log_likelihood()

    def privacy(self) -> dict[str, float]:
        """ε spent so far (Balle conversion at the run's δ) and RDP at the configured order."""
        rep = self.accountant.report()
        return {"epsilon": rep.epsilon, "steps": rep.steps}


def train_sub_lda(parts: Sequence[Corpus], spec: TrainSpec, dp: DPSettings,
                  callback: IterationCallback | None = None) -> Fitted:
    """Run Alg. 1 on the pooled corpora; the Fitted's ``extra`` holds the privacy report and why it stopped."""
    corpus = merge_corpora(parts)
    alpha = spec.options.get("alpha")
    model = DPGibbsLDA(spec.topics, alpha=alpha, beta=float(spec.options["beta"]), rate=dp.rate,  # type: ignore[arg-type]
                       sigma=dp.sigma, clip=dp.clip, adaptive=dp.adaptive, seed=spec.seed)
    model.initialize(corpus)
    orders = sorted(set(DEFAULT_ORDERS) | {dp.order})
    accountant = RdpAccountant(dp.accounted_rate, dp.sigma, dp.delta, budget=dp.epsilon_budget, orders=orders)
    trainer = SubLDATrainer(model, accountant)
    tol = spec.options.get("converge_tol")
    rule = None if tol is None else ConvergenceRule(float(tol), int(spec.options["converge_window"]))  # type: ignore[arg-type]
    stopped_by, sampled = "iterations", []
    for it in range(1, spec.iterations + 1):
        try:
            accountant.step()
        except BudgetExhausted as exc:
            if it == 1:
                raise BudgetExhausted(f"epsilon_budget is smaller than one iteration's cost: {exc}") from None
            stopped_by = "epsilon_budget"
            break
        model.sweep()
        sampled.append(model.last_sampled)
        if callback is not None:
            callback(0, it, trainer)
        if rule is not None and rule.update(math.exp(-model.log_likelihood())):
            stopped_by = "converged (Eq. 9)"
            break
    report = accountant.report()
    extra: dict[str, Any] = {
        "iterations_run": accountant.steps,
        "stopped_by": stopped_by,
        "noise_multiplier": dp.sigma,
        "sampled_tokens_per_iteration": float(np.mean(sampled)) if sampled else 0.0,
        "privacy": report.as_dict() | {"order": dp.order, "rdp_at_order": report.rdp_at(dp.order),
                                       "rdp_per_iteration_at_order": report.rdp_at(dp.order) / max(report.steps, 1),
                                       "unit": "token (one token added or removed)",
                                       "accounted_rate": dp.accounted_rate},
    }
    fitted_model = TopicModel(model.phi(), model.alpha, model.beta, corpus.vocab, algorithm="sub-lda")
    return Fitted(fitted_model, model.theta(), extra)
