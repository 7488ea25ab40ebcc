"""`fedtopic topics RUN`: print the top words of every topic of a run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from fedtopic.cli.output import FormatOption, OutputFormat, print_json, stdout_console
from fedtopic.errors import ModelError
from fedtopic.runs.folder import load_topic_model


def topics(
    run: Annotated[Path, typer.Argument(help="a run folder written by train/simulate/demo")],
    words: Annotated[int, typer.Option(min=1, help="words per topic")] = 10,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Show the top words per topic."""
    path = run / "topics.json"
    if (run / "model.npz").exists():
        load_topic_model(run)  # a truncated or corrupt model is one error line, not topics of a model that is gone
    if not path.is_file():
        raise ModelError(f"{run} has no topics.json (is it a run folder?)")
    try:
        table_data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ModelError(f"{path} is not valid JSON ({exc})") from exc
    rows = [{"topic": t["topic"], "words": t["words"][:words], "weights": (t.get("weights") or [])[:words],
             "prevalence": t.get("prevalence"), "npmi": t.get("npmi")} for t in table_data]
    if fmt is OutputFormat.json:
        print_json(rows)
        return
    table = Table("topic", "share", "NPMI", "top words (weight)", title=str(run))
    for row in rows:
        share = "–" if row["prevalence"] is None else f"{100 * row['prevalence']:.1f} %"
        npmi = "–" if row["npmi"] is None else f"{row['npmi']:.3f}"
        shown = [f"{w} ({x:.3f})" for w, x in zip(row["words"], row["weights"])] if row["weights"] else row["words"]
        table.add_row(str(row["topic"]), share, npmi, " ".join(shown))
    stdout_console.print(table)
