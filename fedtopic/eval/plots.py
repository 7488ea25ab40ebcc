"""PNG plots for run folders: a person would rather look at a curve than read a table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """matplotlib.pyplot on the file-only Agg backend, imported when a plot is drawn: matplotlib costs ~30 MB and
    0.3 s a process, which a command pays only once it writes a figure (after its large arrays are gone)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_curves(
    path: Path,
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    logy: bool = False,
    logx: bool = False,
    points: Mapping[str, tuple[float, float]] | None = None,
) -> Path:
    """Draw one line per named (xs, ys) series, and each named (x, y) of ``points`` as a star (a figure measured
    otherwise than the curve, e.g. the reported one), and save it as a PNG at ``path``."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for name, (xs, ys) in series.items():
        ax.plot(list(xs), list(ys), marker="o" if len(xs) <= 30 else None, markersize=3, label=name)
    for name, (x, y) in (points or {}).items():
        ax.plot([x], [y], marker="*", markersize=11, linestyle="none", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if logy:
        ax.set_yscale("log")
    if logx:
        ax.set_xscale("log")
    ax.grid(True, alpha=0.3)
    if len(series) + len(points or {}) > 1:
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
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    ax.bar(keys, [counts[k] for k in keys])
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))  # integer values: no tick at −1.5
    ax.yaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_grouped_bars(path: Path, groups: Sequence[str], series: Mapping[str, Sequence[float]], *, ylabel: str,
                      title: str, logy: bool | None = None) -> Path:
    """Side-by-side bars: one categorical group per label in ``groups``, one bar per named series.

    ``logy=None`` picks a log scale when the positive values span more than two orders of magnitude (so no bar
    is invisible next to the largest); many or long group labels are rotated so they never overlap.
    """
    positive = [v for values in series.values() for v in values if v > 0]
    if logy is None:
        logy = bool(positive) and max(positive) / min(positive) > 100
    wide = len(groups) > 4 or max((len(g) for g in groups), default=0) * len(groups) > 60
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(min(14.0, max(7.0, 0.6 * len(groups) * max(len(series), 1))), 4.8 if wide else 4.5), dpi=110)
    width = 0.8 / max(len(series), 1)
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        bars = ax.bar(xs, list(values), width=width, label=name)
        if len(groups) * len(series) <= 12:
            ax.bar_label(bars, fmt="%.3g", fontsize=7)
    ax.set_xticks(range(len(groups)), list(groups), rotation=35 if wide else 0, ha="right" if wide else "center")
    if logy:
        ax.set_yscale("log")
    elif all(float(v).is_integer() for values in series.values() for v in values):
        ax.yaxis.set_major_locator(plt.MaxNLocator(integer=True))  # counts (rounds completed): no tick at 17.5
    ax.set_ylabel(ylabel + (" (log scale)" if logy else ""))
    ax.set_title(title)
    if len(series) > 1:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_model_comparison(path: Path, models: Mapping[str, Mapping[str, float | None]],
                          metrics: Sequence[tuple[str, str]], *, title: str) -> Path:
    """One panel per metric (``(key, label)``), one labelled dot per model on a categorical axis.

    Dots instead of bars: held-out figures of rival models differ by a few per cent, which bars from zero hide.
    Metrics no model has are left out.
    """
    shown = [(k, label) for k, label in metrics if any(m.get(k) is not None for m in models.values())]
    names = list(models)
    plt = pyplot()
    fig, axes = plt.subplots(1, len(shown), figsize=(3.2 * len(shown) + 1.2, 0.45 * len(names) + 1.8), dpi=110,
                             squeeze=False, sharey=True)
    for ax, (key, label) in zip(axes[0], shown):
        values = [models[n].get(key) for n in names]
        ys = [i for i, v in enumerate(values) if v is not None]
        xs = [float(v) for v in values if v is not None]
        ax.scatter(xs, ys, s=40, color=[f"C{i}" for i in ys], zorder=3)
        for x, y in zip(xs, ys):
            text = f"{x:,.1f}" if abs(x) >= 100 else f"{x:.3g}"
            ax.annotate(text, (x, y), textcoords="offset points", xytext=(0, 7), ha="center", fontsize=8)
        lo, hi = min(xs), max(xs)
        pad = (hi - lo) * 0.25 or abs(hi) * 0.05 or 0.05
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_title(label, fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(range(len(names)), names)
    axes[0][0].set_ylim(len(names) - 0.5, -0.7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
