"""The PNGs every federated run gets, drawn from its parties' per-round history (docs/history.md): the quality
figure per round per party, ε spent over rounds where DP is on, and each round's time split into computing,
exchanging and waiting. Rounds are integers and their axes say so."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.eval.plots import pyplot
from fedtopic.runs.history import latest_per_round, read_history

LABELS = {"loglik_per_token": "log-likelihood per token (training)", "loss": "loss (training)",
          "l1_to_own": "L1 distance to own distribution"}


def histories_in(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """party → its history rows (the last line per round) from ``folder/*.jsonl``."""
    return {path.stem: latest_per_round(read_history(path)) for path in sorted(folder.glob("*.jsonl"))}


def plot_history(out: Path, histories: Mapping[str, Sequence[Mapping[str, Any]]], *, title: str) -> list[Path]:
    """``quality.png``, ``epsilon.png`` (when any party spent ε) and ``round_time.png`` in ``out``; the paths."""
    rows = {p: list(r) for p, r in histories.items() if r}
    if not rows:
        return []
    out.mkdir(parents=True, exist_ok=True)
    written = []
    name = next((r["quality_name"] for rs in rows.values() for r in rs if r.get("quality_name")), None)
    if any(r.get("quality") is not None for rs in rows.values() for r in rs):
        written.append(_lines(out / "quality.png", rows, "quality", ylabel=LABELS.get(name or "", name or "quality"),
                              title=f"{title}: training quality per round"))
    if any(r.get("epsilon") is not None for rs in rows.values() for r in rs):
        written.append(_lines(out / "epsilon.png", rows, "epsilon", ylabel="ε spent (δ as configured)",
                              title=f"{title}: privacy spent per party"))
    written.append(_time_split(out / "round_time.png", rows, title=f"{title}: time per round (mean over parties)"))
    return written


LEGEND_PARTIES = 10
"""Up to this many parties each line is named in the legend; beyond, every party is a thin grey line and the
median over parties per round is drawn and named (a legend of 64 names covers the axes)."""


def _lines(path: Path, rows: Mapping[str, Sequence[Mapping[str, Any]]], key: str, *, ylabel: str,
           title: str) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    series = {party: [(r["round"], r[key]) for r in rs if r.get(key) is not None] for party, rs in rows.items()}
    series = {party: pts for party, pts in series.items() if pts}
    many = len(series) > LEGEND_PARTIES
    for party, pts in series.items():
        xs, ys = zip(*pts)
        if many:
            ax.plot(xs, ys, color="0.6", linewidth=0.7, alpha=0.6)
        else:
            ax.plot(xs, ys, marker="o" if len(xs) <= 30 else None, markersize=3, label=party)
    if many:
        by_round: dict[int, list[float]] = {}
        for pts in series.values():
            for x, y in pts:
                by_round.setdefault(x, []).append(y)
        rounds = sorted(by_round)
        ax.plot(rounds, [float(np.median(by_round[x])) for x in rounds], color="C0", linewidth=2,
                label=f"median of {len(series)} parties")
        ax.plot([], [], color="0.6", linewidth=0.7, label="each party")
    _finish(fig, ax, path, ylabel=ylabel, title=title, legend=len(series) > 1)
    return path


def _time_split(path: Path, rows: Mapping[str, Sequence[Mapping[str, Any]]], *, title: str) -> Path:
    rounds = sorted({r["round"] for rs in rows.values() for r in rs})
    parts = {"computing": "compute_s", "exchanging": "exchange_s", "waiting": "wait_s"}
    means = {label: np.array([np.mean([r[key] for rs in rows.values() for r in rs if r["round"] == n])
                              for n in rounds]) for label, key in parts.items()}
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    bottom = np.zeros(len(rounds))
    for label, values in means.items():
        ax.bar(rounds, values, bottom=bottom, label=label, width=0.8)
        bottom += values
    _finish(fig, ax, path, ylabel="seconds", title=title, legend=True)
    return path


def _finish(fig: Any, ax: Any, path: Path, *, ylabel: str, title: str, legend: bool) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("round")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if legend:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    pyplot().close(fig)
