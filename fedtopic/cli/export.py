"""`fedtopic export tensorboard RUN --out DIR`: a run's per-round history for TensorBoard."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fedtopic.cli.output import FormatOption, OutputFormat, emit

app = typer.Typer(help="A run's history in other tools' formats.", no_args_is_help=True)


@app.command("tensorboard")
def tensorboard(
    run: Annotated[Path, typer.Argument(help="a run folder (simulate, train, demo), a consortium's folder or state folder (node run), or one history .jsonl")],
    out: Annotated[Path, typer.Option(help="the TensorBoard log folder: one run per party under it (its earlier event files replaced)")],
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """The per-round history as TensorBoard event files: one run per party, tags <party>/<metric> at step = round
    (then: tensorboard --logdir OUT). Works on a live run too: export again to catch up."""
    from fedtopic.runs.tensorboard import export_history

    if not run.exists():
        from fedtopic.errors import ConfigError

        raise ConfigError(f"{run} does not exist")
    written = export_history(run, out)
    emit({"out": str(out), "scalars": written}, fmt,
         [f"{out}: {sum(written.values()):,} scalars of {len(written)} parties; view with tensorboard --logdir {out}"])
