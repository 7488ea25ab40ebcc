"""Fig. 9 of the CSFed/DAFed paper (§8.3): perplexity of the aggregator's inverted model vs δ.

One real model M_r is trained once by centralized LDA (the stand-in for the
final CSFed-LDA aggregate N_Σ; CSFed-LDA matches it, §8.2.1) with K = the
largest of ``settings.topics`` (40 by default, as in the paper). For every
δ ∈ {0, 0.1, 0.5, 1, 5} %, both protection schemes (IPHE: the ⌈δV⌉ most
frequent training words hidden; UPHE: the ⌈δV⌉ least frequent) and both
attacker readings of Eq. 14 (``fedtopic.eval.attacks.inversion``), the
inverted model M_in is built from N_Σ and scored on held-out documents:
perplexity (document completion, and the paper's Eq. 16), η = ln(Perp_in /
Perp_r) (Def. 2, Eq. 5), the relative increase in %, and the mean ζ of
Eq. 15 over the held-out documents taken as new users.

The paper's data (ProgrammableWeb mashups) is not available; 20newsgroups
stands in.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.lda.family import train_centralized
from fedtopic.algorithms.lda.options import LDAHyper
from fedtopic.corpus.types import Corpus
from fedtopic.eval.attacks.figure import plot_inversion
from fedtopic.eval.attacks.inversion import (
    KNOWLEDGE,
    SCHEMES,
    inverted_phi,
    model_privacy_eta,
    protected_words,
    word_frequencies,
    word_preferences,
    zeta_direct,
)
from fedtopic.eval.perplexity import completion_perplexity, eq16_perplexity
from fedtopic.experiments.common import (
    ExperimentSettings,
    Point,
    Progress,
    held_out_subset,
)
from fedtopic.models.distributions import phi_from_counts
from fedtopic.models.prior import paper_alpha

DELTAS_PERCENT = (0.0, 0.1, 0.5, 1.0, 5.0)
"""Fig. 9's encryption ratios δ, in percent of the vocabulary."""

PAPER_FIG9: dict[str, Any] = {
    "figure": "Fig. 9 (§8.3)",
    "setting": "ProgrammableWeb mashups (V = 13,155; 6,000 train / 1,936 test), K = 40, 1000 iterations, Eq. 16 perplexity",
    "delta_percent": 0.5,
    "iphe": {"increase_percent": 203.0, "eta": 1.11},
    "uphe": {"increase_percent": 1.17, "eta": 0.01},
}


def experiment_inversion(train: Corpus, test: Corpus, s: ExperimentSettings, progress: Progress) -> list[Point]:
    """Fig. 9: the aggregator's inverted model under δ-IPHE and δ-UPHE, K = max(s.topics)."""
    test = held_out_subset(test, s)
    n_topics = max(s.topics)
    hyper = LDAHyper(n_topics=n_topics, iterations=s.iterations, alpha=paper_alpha(n_topics), seed=s.seed)
    progress(f"training the real model (K={n_topics}, {s.iterations} sweeps)")
    started = time.perf_counter()
    n_sum = train_centralized([train], hyper).state.n_wk
    train_seconds = time.perf_counter() - started
    alpha, beta = hyper.resolved_alpha, hyper.beta
    frequencies = word_frequencies(train)
    users = test.subset(np.flatnonzero(test.doc_lengths() >= 1))
    preferences = word_preferences(n_sum, beta)

    def score(phi: np.ndarray) -> tuple[float, float]:
        comp = completion_perplexity(phi, test, alpha, iterations=s.fold_in_iterations, seed=s.seed)
        return comp, eq16_perplexity(phi, test, alpha, iterations=s.fold_in_iterations, seed=s.seed)

    progress("scoring the real model")
    real, real_eq16 = score(phi_from_counts(n_sum, beta))
    cache: dict[tuple[str, bytes], tuple[float, float]] = {}
    points = []
    for delta in DELTAS_PERCENT:
        for scheme in SCHEMES:
            hidden = protected_words(frequencies, delta / 100.0, scheme)
            zeta = float(zeta_direct(preferences, hidden, users).mean())
            for knowledge in KNOWLEDGE:
                progress(f"δ={delta}% {scheme} ({knowledge})")
                t0 = time.perf_counter()
                key = ("none", b"") if len(hidden) == 0 else (knowledge, hidden.tobytes())
                if key not in cache:
                    cache[key] = score(inverted_phi(n_sum, hidden, beta, knowledge))
                comp, eq16 = cache[key]
                extra = {
                    "delta_percent": delta,
                    "attacker": knowledge,
                    "hidden_words": len(hidden),
                    "hidden_train_token_share": float(frequencies[hidden].sum() / max(train.n_tokens, 1)),
                    "hidden_test_token_share": float(np.isin(test.words, hidden).mean()),
                    "real_perplexity": real,
                    "real_perplexity_eq16": real_eq16,
                    "vocabulary_size": test.n_words,
                    "eta": model_privacy_eta(comp, real),
                    "eta_eq16": model_privacy_eta(eq16, real_eq16),
                    "increase_percent": 100.0 * (comp / real - 1.0),
                    "increase_percent_eq16": 100.0 * (eq16 / real_eq16 - 1.0),
                    "zeta_mean": zeta,
                    "train_seconds": train_seconds,
                }
                points.append(Point(scheme, n_topics, 1, knowledge, 1, comp, eq16, time.perf_counter() - t0, extra))
    return points


def inversion_summary(points: list[Point]) -> dict[str, Any]:
    """summary.json additions: one row per δ with both schemes side by side, and the paper's figures."""
    rows = []
    for delta in sorted({p.extra["delta_percent"] for p in points}):
        row: dict[str, Any] = {"delta_percent": delta}
        for p in points:
            if p.extra["delta_percent"] != delta:
                continue
            prefix = p.method if p.scheme == "visible-only" else f"{p.method}_known_frequencies"
            row[f"{prefix}_hidden_words"] = p.extra["hidden_words"]
            row[f"{prefix}_perplexity"] = p.perplexity
            row[f"{prefix}_perplexity_eq16"] = p.perplexity_eq16
            row[f"{prefix}_eta"] = p.extra["eta"]
            row[f"{prefix}_eta_eq16"] = p.extra["eta_eq16"]
            row[f"{prefix}_increase_percent"] = p.extra["increase_percent"]
            row[f"{prefix}_increase_percent_eq16"] = p.extra["increase_percent_eq16"]
            row[f"{p.method}_zeta_mean"] = p.extra["zeta_mean"]
        rows.append(row)
    first = points[0].extra
    vocabulary = first["vocabulary_size"]
    uniform = {  # Φ = 1/V knows nothing: perplexity V for any θ; an η above this is the attacker's own loss
        "perplexity": float(vocabulary),
        "eta": math.log(vocabulary / first["real_perplexity"]),
        "eta_eq16": math.log(vocabulary / first["real_perplexity_eq16"]),
    }
    return {"by_delta": rows, "paper_figures": PAPER_FIG9, "deltas_percent": list(DELTAS_PERCENT), "uniform_model": uniform}


def plot_fig9(points: list[Point], run_dir: Path) -> list[Path]:
    """inversion.png: perplexity of M_in and η vs δ, IPHE and UPHE, both attacker readings."""
    deltas = sorted({p.extra["delta_percent"] for p in points})
    perplexity: dict[str, list[float]] = {}
    eta: dict[str, list[float]] = {}
    for p in sorted(points, key=lambda q: q.extra["delta_percent"]):
        name = f"{p.method.upper()} ({p.scheme})"
        perplexity.setdefault(name, []).append(p.perplexity)
        eta.setdefault(name, []).append(p.extra["eta"])
    real = points[0].extra["real_perplexity"]
    title = f"Fig. 9: model inversion by the aggregator (K={points[0].topics})"
    uniform = float(points[0].extra["vocabulary_size"])
    return [plot_inversion(run_dir / "inversion.png", deltas, perplexity, eta, real_perplexity=real, uniform_perplexity=uniform, title=title)]
