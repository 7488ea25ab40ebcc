"""PNG plots for run folders: a person would rather look at a curve than read a table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (backend must be chosen first)


def plot_curves(
    path: Path,
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    logy: bool = False,
) -> Path:
    """Draw one line per named (xs, ys) series and save it as a PNG at ``path``."""
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for name, (xs, ys) in series.items():
        ax.plot(list(xs), list(ys), marker="o" if len(xs) <= 30 else None, markersize=3, label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if logy:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    if len(series) > 1:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_histogram(path: Path, values: Sequence[int], *, xlabel: str, title: str) -> Path:
    """Bar chart of how often each integer value occurs (e.g. staleness in rounds)."""
    counts: dict[int, int] = {}
    for v in values:
        counts[int(v)] = counts.get(int(v), 0) + 1
    keys = sorted(counts)
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    ax.bar(keys, [counts[k] for k in keys])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
