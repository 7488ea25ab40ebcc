"""Shared CLI plumbing: the --format option, JSON output, and progress bars on stderr."""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from fedtopic.runs.json_text import dumps

stderr_console = Console(stderr=True)
stdout_console = Console(width=None if sys.stdout.isatty() else 200, soft_wrap=not sys.stdout.isatty())
"""Wide and unwrapped when redirected: a file gets whole names and table rows, not an 80-column terminal's cut."""


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


FormatOption = Annotated[
    OutputFormat, typer.Option("--format", help="text for people, json for scripts (stdout only carries the result)")
]


def print_json(data: Any) -> None:
    """Machine-readable result on stdout, nothing else."""
    typer.echo(dumps(data, default=str))


def emit(result: dict[str, Any], fmt: OutputFormat, text_lines: list[str]) -> None:
    """Print a command's result: ``text_lines`` for people, ``result`` as JSON for scripts."""
    if fmt is OutputFormat.json:
        print_json(result)
    else:
        typer.echo("\n".join(text_lines))


def progress_bar(*, transient: bool = False) -> Progress:
    """A rich progress bar that draws on stderr so stdout stays clean for --format json."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr_console,
        transient=transient,
    )


def count_parties(n: int) -> str:
    """"1 party", "3 parties"."""
    return f"{n} {'party' if n == 1 else 'parties'}"


def print_warnings(summary: dict[str, Any], run_dir: Any = None) -> None:
    """One stderr line per entry of the summary's ``warnings`` and per problem of ``run_dir``'s model
    (``runs.sanity``): what a run did that a user would not expect (fewer topics than asked, a model that ended
    where it started), whatever the output format."""
    from fedtopic.runs.sanity import model_warnings

    found = list(summary.get("warnings") or ()) + ([] if run_dir is None else model_warnings(run_dir))
    for warning in found:
        stderr_console.print(f"warning: {warning}", highlight=False, soft_wrap=True)
