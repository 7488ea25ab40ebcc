"""iFTM's options and the little arithmetic on them: light (no numba), so the registry lists them cheaply."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from fedtopic.algorithms.base import Option, OptionValue, TrainSpec
from fedtopic.errors import ConfigError
from fedtopic.models.laplace_kept import kept_per_token

IFTM_OPTIONS: tuple[Option, ...] = (
    Option("alpha", float, None, "document-topic prior α", minimum=0.0, exclusive_minimum=True,
           default_text="50/K"),
    Option("beta", float, 0.01, "topic-word prior β", minimum=0.0, exclusive_minimum=True),
    Option("epsilon", float, 11.0, "Laplace privacy parameter ε of every token's word vector (inf: off)",
           minimum=0.0, exclusive_minimum=True, allow_infinite=True),
    Option("tau", float, None, "privatised entries ≤ τ are dropped (sparsity; §3.1.3; no privacy cost). A setting "
           "whose kept noise is over 90 % of what the sampler reads is refused, naming a τ that works", minimum=0.0,
           default_text="the τ that works at this ε and vocabulary (suggested_tau, rounded up to 0.01; the paper's "
                        "0.2 keeps hundreds of noise words a token at V in the thousands)"),
    Option("xi", float, 0.5, "the master merges topics with weighted Jaccard ρ ≥ ξ (Eq. 29)", minimum=0.0,
           exclusive_minimum=True, maximum=1.0),
    Option("top_words", int, 20, "L: the top words Eq. 29 compares", minimum=1),
    Option("local_iterations", int, 10, "local MH iterations between two exchanges with the master", minimum=1),
    Option("party_topics", str, "", "each party's K, comma-separated (heterogeneous models; default: K for all)"),
    Option("debias", bool, False, "subtract the privatisation's expected noise floor from C^KW before Φ (not in the "
           "paper; post-processing of what the model reports and sends, no privacy cost)"),
)


NOISE_SHARE_LIMIT = 0.9
"""A run is refused when more than this share of the privatised input's mass is noise."""


def noise_share(epsilon: float, tau: float, n_words: int) -> float:
    """The share of a token's kept mass that is noise: each kept noise entry has mean value τ + 1/ε."""
    true, noise = kept_per_token(epsilon, tau, n_words)
    mass = noise * (tau + 1.0 / epsilon) if math.isfinite(epsilon) else 0.0
    return mass / (mass + true) if mass + true > 0 else 0.0


def suggested_tau(epsilon: float, n_words: int) -> float:
    """The τ that keeps the most true tokens, weighted by the square of the share of kept mass that is true.

    τ maximises p·(p / (p + n))² on [0, 1], p and n from ``kept_per_token`` (above 1 the share stays
    (V − 1)·e^(−ε) while p falls). At ε = 11 it is the best τ measured on bbc-news and reuters-r8, where the
    paper's 0.2 keeps ~590 and ~410 noise words a token; at ε = 8 the best measured is 1.0–1.1, 3–16 % better
    (docs/results/iftm.md, "iFTM's τ"). ε = ∞ (no privatisation): 0."""
    if not math.isfinite(epsilon):
        return 0.0
    kept = [kept_per_token(epsilon, t, n_words) for t in np.linspace(0.0, 1.0, 10_001)]
    return float(np.argmax([true * (true / (true + noise)) ** 2 for true, noise in kept])) / 10_000


def tau_of(options: Mapping[str, OptionValue], n_words: int) -> float:
    """τ as given, or by default ``suggested_tau`` at this ε and vocabulary rounded up to 0.01 (what a refusal
    names)."""
    given = options.get("tau")
    if given is not None:
        return float(given)  # type: ignore[arg-type]
    return math.ceil(suggested_tau(float(options["epsilon"]), n_words) * 100) / 100  # type: ignore[arg-type]


def check_noise(options: Mapping[str, OptionValue], n_words: int) -> None:
    """ConfigError when ε and τ leave more than ``NOISE_SHARE_LIMIT`` of the input noise at this vocabulary,
    naming the τ (and what it keeps) that works."""
    epsilon, tau = float(options["epsilon"]), tau_of(options, n_words)  # type: ignore[arg-type]
    share = noise_share(epsilon, tau, n_words)
    if share <= NOISE_SHARE_LIMIT:
        return
    _, noise = kept_per_token(epsilon, tau, n_words)
    said = (f"iftm: at ε = {epsilon:g} and τ = {tau:g} a token keeps ~{noise:,.0f} privatised noise words of V = "
            f"{n_words:,} beside its own ({100 * share:.0f} % of what the sampler reads is noise): the topics would "
            "be noise. ")
    better = math.ceil(suggested_tau(epsilon, n_words) * 100) / 100
    left = noise_share(epsilon, better, n_words)
    if left > NOISE_SHARE_LIMIT:
        raise ConfigError(said + f"No τ helps at this ε and vocabulary (the best, {better:g}, still leaves "
                          f"{100 * left:.0f} %): raise ε, or cut the vocabulary "
                          "(--max-vocabulary, or vocab align's --min-df)")
    true_b, noise_b = kept_per_token(epsilon, better, n_words)
    raise ConfigError(said + f"--opt tau={better:g} keeps {noise_b:.2g} (and the true word {100 * true_b:.0f} % of "
                      "the time); τ drops entries after the privatisation and costs no privacy. Or raise ε, or cut "
                      "the vocabulary")


def parse_party_topics(options: Mapping[str, OptionValue]) -> list[int] | None:
    """The K of every party from ``party_topics`` (None when unset); ConfigError if it is not integers ≥ 2."""
    raw = str(options.get("party_topics") or "").strip()
    if not raw:
        return None
    try:
        ks = [int(x) for x in raw.split(",")]
    except ValueError:
        raise ConfigError(f"party_topics takes comma-separated integers, got {raw!r}") from None
    if min(ks) < 2:
        raise ConfigError("party_topics: every K must be at least 2")
    return ks


def party_topic_counts(options: Mapping[str, OptionValue], topics: int, parties: int) -> list[int]:
    """Every party's K: ``party_topics`` if given (one per party), else ``topics`` for all."""
    ks = parse_party_topics(options)
    if ks is None:
        return [topics] * parties
    if len(ks) != parties:
        raise ConfigError(f"party_topics lists {len(ks)} K's for {parties} parties")
    return ks


def topics_of(options: Mapping[str, OptionValue], topics: int, index: int) -> int:
    """Party ``index``'s K: its entry of ``party_topics`` if given, else ``topics``."""
    ks = parse_party_topics(options)
    return topics if ks is None else ks[index]


def global_rounds(spec: TrainSpec) -> int:
    """Exchanges with the master: ⌈iterations / local_iterations⌉."""
    return math.ceil(spec.iterations / int(spec.options["local_iterations"]))  # type: ignore[arg-type]
