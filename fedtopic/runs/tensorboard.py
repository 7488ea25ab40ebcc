"""A run's per-round history as TensorBoard event files (tensorboardX, ``fedtopic[tensorboard]``): one TensorBoard
run per party (``OUT/<party>/``), scalars tagged ``<party>/<metric>`` at step = round, wall time = the round's end.

What NVFlare and OpenFL users wire into TensorBoard, read from the history every runtime already writes
(``runs.history``): a run folder (``history/<party>.jsonl``: simulate, train, demo), a consortium's state folder
(``state/<party>/history.jsonl``: node run), or one history file; a ``train`` run, which has no rounds, gives its
per-iteration held-out perplexity curve (summary.json's ``perplexity_curve``) at step = iteration. The metrics:
the algorithm's quality figure under its own name (e.g. ``validation_loss``), ε where DP is on, the round's times
and bytes, its contributors, the largest staleness of an asynchronous round, and every number of the algorithm's
``extra``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from fedtopic.errors import ConfigError, ModelError
from fedtopic.runs.folder import read_summary
from fedtopic.runs.history import latest_per_round, read_history

TIMINGS = ("compute_s", "exchange_s", "wait_s", "bytes_up", "bytes_down", "recoveries")


def history_files(path: Path) -> dict[str, Path]:
    """party → its history file under ``path`` (a run folder, a state folder or a consortium folder holding
    ``state/``, or one ``.jsonl``); ConfigError when there is none."""
    if path.is_file():
        return {path.stem if path.stem != "history" else path.parent.name: path}
    found = {p.stem: p for p in sorted((path / "history").glob("*.jsonl"))}
    for state in (path, path / "state"):
        found |= {p.parent.name: p for p in sorted(state.glob("*/history.jsonl"))}
    if not found:
        raise ConfigError(f"{path} holds no history (a run folder's history/*.jsonl, or state/<party>/history.jsonl)")
    return found


def scalars(row: Mapping[str, Any]) -> Iterator[tuple[str, float]]:
    """(metric, value) of one history row: finite numbers only."""
    values: dict[str, Any] = {name: row.get(name) for name in TIMINGS}
    values[str(row.get("quality_name") or "quality")] = row.get("quality")
    values["epsilon"] = row.get("epsilon")
    if isinstance(row.get("contributors"), list):
        values["contributors"] = len(row["contributors"])
    if isinstance(row.get("staleness"), dict) and row["staleness"]:
        values["staleness_max"] = max(row["staleness"].values())
    for key, value in (row.get("extra") or {}).items():
        values[f"extra/{key}"] = value
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or abs(value) == float("inf"):
            continue
        yield name, float(value)


def write_tensorboard(histories: Mapping[str, Sequence[Mapping[str, Any]]], out: Path) -> dict[str, int]:
    """Event files under ``out/<party>/`` (earlier event files there replaced); party → scalars written."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        raise ConfigError("exporting to TensorBoard needs tensorboardX: pip install 'fedtopic[tensorboard]'") from None
    written: dict[str, int] = {}
    for party, rows in histories.items():
        folder = out / party
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("events.out.tfevents.*"):
            old.unlink()
        writer = SummaryWriter(logdir=str(folder))
        count = 0
        try:
            for row in rows:
                for name, value in scalars(row):
                    writer.add_scalar(f"{party}/{name}", value, global_step=int(row["round"]),
                                      walltime=float(row.get("time") or 0.0) or None)
                    count += 1
        finally:
            writer.close()
        written[party] = count
    return written


def train_curves(run: Path) -> dict[str, list[dict[str, Any]]]:
    """A ``train`` run's perplexity curve as history-shaped rows (round = iteration), per model: ``train`` for one,
    ``party-<i>`` for local-lda's one per party; {} when ``run`` has none."""
    try:
        curve = read_summary(run).get("perplexity_curve")
    except (ModelError, ValueError, OSError):  # no summary, or a damaged one: no curve
        return {}
    if not isinstance(curve, dict) or not curve:
        return {}
    names = {key: "train" if len(curve) == 1 else f"party-{key}" for key in curve}
    return {names[key]: [{"round": int(step), "quality": value, "quality_name": "perplexity"}
                         for step, value in points]
            for key, points in curve.items()}


def export_history(path: Path, out: Path) -> dict[str, int]:
    """Every party's history under ``path`` (the last line per round), or a train run's curve, written to ``out``."""
    curves = train_curves(path) if path.is_dir() and not (path / "history").is_dir() else {}
    if curves:
        return write_tensorboard(curves, out)
    return write_tensorboard({party: latest_per_round(read_history(file))
                              for party, file in history_files(path).items()}, out)
