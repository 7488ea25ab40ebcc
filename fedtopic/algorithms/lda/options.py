"""The LDA family's hyper-parameters and options: light (no numba), so the registry can list them cheaply."""

from __future__ import annotations

from dataclasses import dataclass

from fedtopic.algorithms.base import Option, TrainSpec
from fedtopic.errors import ConfigError


@dataclass(frozen=True)
class LDAHyper:
    """Hyper-parameters shared by every LDA-family algorithm (α 0.1 as tomotopy's, measured; β = 0.01 as paper
    §8.1)."""

    n_topics: int
    iterations: int
    alpha: float | None = None
    beta: float = 0.01
    sampler: str = "auto"
    threads: int = 1
    seed: int = 0
    optim_interval: int = 0
    optim_beta: bool = False

    @property
    def resolved_alpha(self) -> float:
        """The given α, else ``models.prior.DEFAULT_ALPHA`` (tomotopy's 0.1; where α is learned, its start)."""
        if self.alpha is not None:
            return self.alpha
        from fedtopic.models.prior import (
            DEFAULT_ALPHA,  # here: this module stays light (no numba)
        )

        return DEFAULT_ALPHA


LDA_OPTIONS: tuple[Option, ...] = (
    Option("alpha", float, None, "document-topic prior α", minimum=0.0, exclusive_minimum=True,
           default_text="0.1 (tomotopy's; measured on every built-in dataset against the paper's 50/K, which "
                        "smooths short documents' θ towards uniform); where optim_interval learns α, its start"),
    Option("beta", float, 0.01, "topic-word prior β", minimum=0.0, exclusive_minimum=True),
    Option("sampler", str, "auto",
           "Gibbs kernel: dense (exact; O(K) a token, O(k_w + k_d) by SparseLDA's buckets once words hold few "
           "topics), sparse (alias MH, large K), mh (exact MH, O(min(k_d, 256)) a token whatever K) or auto (dense "
           "below K = 1000, and below K = 2000 for documents of 100+ tokens on average; mh otherwise)",
           choices=("auto", "dense", "sparse", "mh")),
    Option("threads", int, 1, "sampler threads (document shards; same seed and threads, same result)", minimum=1),
)
"""The options every LDA-family algorithm takes."""

PRIOR_OPTIONS: tuple[Option, ...] = (
    Option("optim_interval", int, 0,
           "learn an asymmetric α every this many sweeps by Minka's fixed point, as tomotopy's optim_interval "
           "(0: keep α fixed; tomotopy's default is 10); the dense sampler only (auto then means dense)", minimum=0),
    Option("optim_beta", bool, False, "with optim_interval: learn a symmetric β too (Minka's fixed point)"),
)
"""Learned priors (models.hyperopt): the algorithms that can sum the statistics they need."""


def check_prior_options(spec: TrainSpec) -> None:
    """ConfigError before any work when the learned-prior options cannot work together."""
    o = spec.options
    if o.get("optim_beta") and not o.get("optim_interval"):
        raise ConfigError("--opt optim_beta=true learns β every optim_interval sweeps: give --opt optim_interval=10 "
                          "too")
    if o.get("optim_interval") and o.get("sampler") in ("sparse", "mh"):
        raise ConfigError(f"--opt optim_interval learns an asymmetric α, which the {o['sampler']} sampler's "
                          "proposals cannot take: use --opt sampler=dense (or auto)")
    if o.get("optim_interval") and o.get("dp"):  # the federated algorithms' DP switch (``dp_options``)
        raise ConfigError("--opt optim_interval shares the parties' document-topic histograms, which no DP "
                          "mechanism covers yet: learn α without dp, or keep it fixed under dp")


STEPS_OPTION = Option("steps", int, 1, "multi-step s: local sweeps between exchanges (paper §7.3)", minimum=1)


def hyper_from_spec(spec: TrainSpec) -> LDAHyper:
    """``LDAHyper`` from a validated spec of an LDA-family algorithm."""
    o = spec.options
    return LDAHyper(n_topics=spec.topics, iterations=spec.iterations, alpha=o.get("alpha"),  # type: ignore[arg-type]
                    beta=float(o.get("beta", 0.01)), sampler=str(o.get("sampler", "auto")),  # type: ignore[arg-type]
                    threads=int(o.get("threads", 1)), seed=spec.seed,  # type: ignore[arg-type]
                    optim_interval=int(o.get("optim_interval", 0)),  # type: ignore[arg-type]
                    optim_beta=bool(o.get("optim_beta", False)))


