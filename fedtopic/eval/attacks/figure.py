"""Fig. 9 as a PNG: the inverted model's perplexity and η against δ for δ-IPHE and δ-UPHE."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from fedtopic.eval.plots import pyplot


def plot_inversion(
    path: Path,
    deltas_percent: Sequence[float],
    perplexity: Mapping[str, Sequence[float]],
    eta: Mapping[str, Sequence[float]],
    *,
    real_perplexity: float,
    uniform_perplexity: float,
    title: str,
) -> Path:
    """Two panels over categorical δ (%): perplexity of M_in and η (Eq. 5), one line per named series.

    Dotted references: the real model M_r and the uniform model Φ = 1/V (perplexity V), whose η is
    the most an attacker who learns nothing should concede.
    """
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), dpi=110)
    xs = range(len(deltas_percent))
    labels = [f"{d:g}" for d in deltas_percent]
    for name, ys in perplexity.items():
        left.plot(xs, list(ys), marker="o", linestyle="--" if "known" in name else "-", label=name)
    left.axhline(real_perplexity, color="grey", linestyle=":", label="real model M_r")
    left.axhline(uniform_perplexity, color="black", linestyle=":", label="uniform model (perplexity V)")
    left.set_yscale("log")
    left.set_ylabel("held-out perplexity of M_in (document completion)")
    for name, ys in eta.items():
        right.plot(xs, list(ys), marker="o", linestyle="--" if "known" in name else "-", label=name)
    right.axhline(math.log(uniform_perplexity / real_perplexity), color="black", linestyle=":", label="uniform model")
    right.set_ylabel("η = ln(Perp(M_in) / Perp(M_r))   (Eq. 5)")
    for ax in (left, right):
        ax.set_xticks(list(xs), labels)
        ax.set_xlabel("δ: share of the vocabulary encrypted (%)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
