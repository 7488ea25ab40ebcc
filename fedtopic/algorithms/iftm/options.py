"""iFTM's options and the little arithmetic on them: light (no numba), so the registry lists them cheaply."""

from __future__ import annotations

import math
from collections.abc import Mapping

from fedtopic.algorithms.base import Option, OptionValue, TrainSpec
from fedtopic.errors import ConfigError

IFTM_OPTIONS: tuple[Option, ...] = (
    Option("alpha", float, None, "document-topic prior α", minimum=0.0, exclusive_minimum=True,
           default_text="50/K"),
    Option("beta", float, 0.01, "topic-word prior β", minimum=0.0, exclusive_minimum=True),
    Option("epsilon", float, 11.0, "Laplace privacy parameter ε of every token's word vector (inf: off)",
           minimum=0.0, exclusive_minimum=True, allow_infinite=True),
    Option("tau", float, 0.2, "privatised entries ≤ τ are dropped (sparsity; §3.1.3)", minimum=0.0),
    Option("xi", float, 0.5, "the master merges topics with weighted Jaccard ρ ≥ ξ (Eq. 29)", minimum=0.0,
           exclusive_minimum=True, maximum=1.0),
    Option("top_words", int, 20, "L: the top words Eq. 29 compares", minimum=1),
    Option("local_iterations", int, 10, "local MH iterations between two exchanges with the master", minimum=1),
    Option("party_topics", str, "", "each party's K, comma-separated (heterogeneous models; default: K for all)"),
    Option("debias", bool, False, "subtract the privatisation's expected noise floor from C^KW before Φ (not in the "
           "paper; post-processing of what the model reports and sends, no privacy cost)"),
)


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
