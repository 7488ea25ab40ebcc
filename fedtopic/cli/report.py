"""`fedtopic report RUN --out report.html`: one self-contained HTML file with every dashboard panel."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from fedtopic.cli.output import stdout_console


def report(
    path: Annotated[Path, typer.Argument(help="a run folder, or a consortium.toml with --party")],
    out: Annotated[Path, typer.Option(help="the HTML file to write")] = Path("report.html"),
    party: Annotated[Optional[str], typer.Option(help="consortium.toml: as this party")] = None,  # noqa: UP007
    state: Annotated[Optional[Path], typer.Option(help="consortium.toml: the party's state folder")] = None,  # noqa: UP007
    url: Annotated[Optional[str], typer.Option(help="consortium.toml: the aggregator's URL (default: aggregator.url)")] = None,  # noqa: UP007
    rpc: Annotated[Optional[str], typer.Option(help="consortium.toml: JSON-RPC URL (default: chain.rpc)")] = None,  # noqa: UP007
    insecure: Annotated[bool, typer.Option("--insecure", help="consortium.toml: allow plain HTTP to a non-loopback "
                                                              "aggregator")] = False,
) -> None:
    """Write the dashboard of a run as one HTML file that opens without a network or a server."""
    from fedtopic.dashboard.board import Board
    from fedtopic.dashboard.report import write_report
    from fedtopic.dashboard.sources import open_source

    board = Board(open_source(path, party=party, state_dir=state, url=url, rpc=rpc, insecure=insecure))
    try:
        written = write_report(board, out)
    finally:
        board.close()
    stdout_console.print(f"report: {written} ({written.stat().st_size / 1e3:.0f} kB)", highlight=False)
