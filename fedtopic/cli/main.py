"""The `fedtopic` command: a thin Typer layer over the package.

Every command lives in its own module under ``fedtopic.cli`` and is registered
here. A ``FedTopicError`` becomes one line on stderr and exit code 2; nothing a
user can cause prints a traceback.
"""

from __future__ import annotations

import sys

import typer

from fedtopic import __version__
from fedtopic.cli import (
    aggregator,
    chain,
    consortium,
    data,
    demo,
    experiment,
    infer,
    ledger,
    node,
    simulate,
    topics,
    train,
)
from fedtopic.errors import FedTopicError

app = typer.Typer(
    name="fedtopic",
    help="Federated topic modelling: train one topic model across parties whose documents never leave them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Federated topic modelling."""


@app.command()
def version() -> None:
    """Print the fedtopic version."""
    typer.echo(__version__)


app.command()(demo.demo)
app.command()(train.train)
app.command()(topics.topics)
app.command()(infer.infer)
app.command()(simulate.simulate)
app.command()(experiment.experiment)
app.add_typer(data.app, name="data")
app.add_typer(node.app, name="node")
app.add_typer(consortium.app, name="consortium")
app.add_typer(chain.app, name="chain")
app.add_typer(ledger.app, name="ledger")
app.add_typer(aggregator.app, name="aggregator")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (the click/typer standalone mode exits via SystemExit)."""
    try:
        app(args=argv, prog_name="fedtopic")
    except FedTopicError as exc:
        typer.secho(f"error: {exc}", err=True, fg="red")
        return 2
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


def run() -> None:
    """The installed `fedtopic` script."""
    sys.exit(main())


if __name__ == "__main__":
    run()
