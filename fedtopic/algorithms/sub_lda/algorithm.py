"""``sub-lda``: differentially private collapsed Gibbs with Poisson subsampling (Huang & Chen, Alg. 1).

Every iteration each token is in the batch with probability γ (Def. 3.3); a
sampled token reads its word's counts with fresh N(0, σ²) noise on every topic
(clipped), and Eq. 1 draws its topic. σ comes from a per-iteration RDP budget,
σ² = α/(2ε(α)) (§4.1), or is given as a noise multiplier. γ = 1 is HDP-LDA, the
paper's baseline. The accountant (``fedtopic.privacy``) composes Eq. 3 over the
iterations run and reports RDP per order and (ε, δ); training stops at the
iteration budget, at Eq. 9's convergence rule, or before a step that would
exceed ``epsilon_budget``.

Centralised mode only (its use inside the consortium is the ``dp`` option set
of csfed-lda and dafed-lda).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fedtopic.algorithms.base import (
    Algorithm,
    Fitted,
    IterationCallback,
    Mode,
    Option,
    OptionValue,
    Privacy,
    TrainSpec,
)
from fedtopic.algorithms.lda.dp_options import (
    DP_OPTIONS,
    check_one_step_affordable,
    dp_settings,
)
from fedtopic.algorithms.lda.options import LDA_OPTIONS
from fedtopic.algorithms.lda.train_writer import LDATrainWriter
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ConfigError

SUB_LDA_OPTIONS: tuple[Option, ...] = LDA_OPTIONS[:2] + DP_OPTIONS + (
    Option("adaptive_eta", float, None, "adaptive subsampling (§5.6) with η = 1/(vq): frequent words at rate vγ",
           minimum=0.0, exclusive_minimum=True, default_text="off (uniform subsampling)"),
    Option("adaptive_q", float, 0.5, "adaptive subsampling: share q of each topic's tokens in its frequent set",
           minimum=0.0, exclusive_minimum=True, maximum=1.0),
    Option("converge_tol", float, None, "Eq. 9's D̂: stop once |per_i − per_{i−1}| ≤ D̂ for converge_window iterations",
           minimum=0.0, exclusive_minimum=True, default_text="off (run all iterations)"),
    Option("converge_window", int, 5, "Eq. 9's s: consecutive iterations within D̂", minimum=1),
)


class SubLDA(LDATrainWriter, Algorithm):
    name = "sub-lda"
    summary = "differentially private collapsed Gibbs with Poisson subsampling and Rényi-DP accounting"
    paper = "Huang & Chen, SUB-LDA (Alg. 1, Eq. 3)"
    modes = frozenset({Mode.centralised})
    options = SUB_LDA_OPTIONS

    def parse_options(self, raw: Mapping[str, object], *, where: str = "--opt") -> dict[str, OptionValue]:
        options = super().parse_options(raw, where=where)
        try:
            check_one_step_affordable(dp_settings(options))
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        return options

    def privacy(self, spec: TrainSpec) -> Privacy:
        """Every iteration's read of the counts is a DP release (Alg. 1)."""
        dp = dp_settings(spec.options)
        return Privacy(True, dp.epsilon_budget, dp.delta)

    def fit(self, parts: Sequence[Corpus], spec: TrainSpec,
            callback: IterationCallback | None = None) -> list[Fitted]:
        """One DP chain on the pooled corpora; the callback sees party index 0 and the running trainer."""
        from fedtopic.algorithms.sub_lda.train import train_sub_lda

        return [train_sub_lda(parts, spec, dp_settings(spec.options), callback)]
