"""`fedtopic algorithms`: every registered algorithm, the modes it runs in, its update and its options; with
`--protections`, every registered protection, what it carries and what the aggregator sees under it; with
`--links`, every registered link and the mode it carries."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from fedtopic.cli.output import FormatOption, OutputFormat, print_json, stdout_console


def algorithms(
    name: Annotated[Optional[str], typer.Argument(help="show only this algorithm (or protection, or link)")] = None,
    protections: Annotated[bool, typer.Option("--protections", help="list the protections instead")] = False,
    links: Annotated[bool, typer.Option("--links", help="list the links instead (`simulate --link`, `node run --link`)")] = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """List every algorithm with its options (`--opt key=value`, `[algorithm.options]`) and modes."""
    from rich.table import Table

    from fedtopic.algorithms.registry import algorithm_names, get_algorithm

    if protections:
        _protections(name, fmt)
        return
    if links:
        _links(name, fmt)
        return

    described = [get_algorithm(n).describe() for n in ([name] if name else algorithm_names())]
    if fmt is OutputFormat.json:
        print_json(described if name is None else described[0])
        return
    for d in described:
        update = d["update"]
        carried = f"; sends {update['kind']}, protections: {', '.join(update['protections'])}" if update else ""
        stdout_console.print(f"[bold]{d['name']}[/]  {d['summary']}")
        stdout_console.print(f"  modes: {', '.join(d['modes'])}{carried}; paper: {d['paper']}", highlight=False)
        table = Table("option", "type", "default", "meaning", box=None, pad_edge=False, padding=(0, 2, 0, 2))
        for o in d["options"]:
            choices = f" ({' | '.join(o['choices'])})" if "choices" in o else ""
            table.add_row(o["name"], o["type"], o["default_text"], o["help"] + choices)
        stdout_console.print(table)
        stdout_console.print()


def _protections(name: str | None, fmt: OutputFormat) -> None:
    """Every registered protection (or ``name``): what it carries, its minimum contributors, what it reveals."""
    from fedtopic.protections import get_protection, protection_names

    described = [get_protection(n).describe() for n in ([name] if name else protection_names())]
    if fmt is OutputFormat.json:
        print_json(described if name is None else described[0])
        return
    for d in described:
        stdout_console.print(f"[bold]{d['name']}[/]  {d['summary']}")
        stdout_console.print(f"  carries: {', '.join(d['carries'])}; sums of at least {d['min_contributors']}; "
                             f"the aggregator sees {d['aggregator_sees']}", highlight=False)


def _links(name: str | None, fmt: OutputFormat) -> None:
    """Every registered link (or ``name``): the mode it carries and what it is."""
    from fedtopic.links import get_link, link_names

    described = [{"name": link.name, "mode": link.mode, "summary": link.summary}
                 for link in (get_link(n) for n in ([name] if name else link_names()))]
    if fmt is OutputFormat.json:
        print_json(described if name is None else described[0])
        return
    for d in described:
        stdout_console.print(f"[bold]{d['name']}[/]  ({d['mode']}hronous) {d['summary']}", highlight=False)
