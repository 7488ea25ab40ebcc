"""The `fedtopic` command: a thin Typer layer over the package.

Every command lives in its own module under ``fedtopic.cli`` and is imported
only when it runs (``LazyGroup``), so ``fedtopic --help`` and ``fedtopic
version`` cost no import of numba, web3 or FastAPI. A ``FedTopicError`` or a
usage mistake becomes one line on stderr and exit code 2; nothing a user can
cause prints a traceback.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import Any

import typer
from typer.core import TyperGroup

try:  # typer ≥ 0.25 carries its own copy of click; older releases use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - depends on the installed typer
    from click import exceptions as click_errors  # type: ignore[no-redef]

from fedtopic.version import __version__

COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("fedtopic.cli.demo:demo", "The main job: DAFed-LDA on an embedded chain beside centralized and stand-alone LDA."),
    "algorithms": ("fedtopic.cli.algorithms:algorithms", "Every algorithm with its options and the modes it runs in."),
    "train": ("fedtopic.cli.train:train", "Train an algorithm in its centralised mode and evaluate it."),
    "simulate": ("fedtopic.cli.simulate:simulate", "A whole consortium in one command, for any federated algorithm."),
    "topics": ("fedtopic.cli.topics:topics", "Show the top words per topic of a run."),
    "infer": ("fedtopic.cli.infer:infer", "θ of new documents under a trained model."),
    "dashboard": ("fedtopic.cli.dashboard:dashboard", "Watch a run or a consortium live in the browser."),
    "report": ("fedtopic.cli.report:report", "A run's dashboard as one self-contained HTML file."),
    "experiment": ("fedtopic.cli.experiment:experiment", "Reproduce one of the papers' experiments."),
    "data": ("fedtopic.cli.data:app", "Built-in datasets: list, fetch, info; build a token store."),
    "vocab": ("fedtopic.cli.vocab:app", "Vocabularies for your own documents: one party's, a consortium's merged one."),
    "consortium": ("fedtopic.cli.consortium:app", "Create a consortium, deploy it, grant and revoke read access."),
    "chain": ("fedtopic.cli.chain:app", "Run a local EVM chain for a consortium."),
    "node": ("fedtopic.cli.node:app", "Run one party of a consortium."),
    "ledger": ("fedtopic.cli.ledger:app", "Inspect and audit the channels on chain."),
    "aggregator": ("fedtopic.cli.aggregator:app", "Run the aggregator for synchronous algorithms."),
    "export": ("fedtopic.cli.export:app", "A run in other tools' formats: TensorBoard, pyLDAvis, gensim."),
    "privacy": ("fedtopic.cli.privacy:app", "The Rényi-DP accountant: what a subsampled Gaussian mechanism spends."),
}
"""name → ("module:attribute", one-line help). An attribute is a command function or a Typer sub-app."""


class LazyGroup(TyperGroup):
    """A Typer group whose commands are imported on first use; ``--help`` lists them from ``COMMANDS``."""

    def list_commands(self, ctx: Any) -> list[str]:
        return [*TyperGroup.list_commands(self, ctx), *COMMANDS]

    def get_command(self, ctx: Any, name: str) -> Any:
        if name not in COMMANDS:
            return TyperGroup.get_command(self, ctx, name)
        module, _, attr = COMMANDS[name][0].partition(":")
        target = getattr(import_module(module), attr)
        if isinstance(target, typer.Typer):  # a sub-app stays a group even with one command (`aggregator serve`)
            command = typer.main.get_group(target)
        else:
            single = typer.Typer(pretty_exceptions_enable=False)
            single.command(name=name)(target)
            command = typer.main.get_command(single)
        command.name = name
        return command

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        own = [(name, TyperGroup.get_command(self, ctx, name)) for name in TyperGroup.list_commands(self, ctx)]
        rows = [(name, cmd.get_short_help_str(80)) for name, cmd in own if cmd is not None]
        rows += [(name, help_text) for name, (_, help_text) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


app = typer.Typer(
    name="fedtopic",
    cls=LazyGroup,
    help="Federated topic modelling: train one topic model across parties whose documents never leave them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def _root() -> None:
    """Federated topic modelling."""


@app.command()
def version() -> None:
    """Print the fedtopic version."""
    typer.echo(__version__)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code: 0, 2 for a user error (one line on stderr), 130 if interrupted (one
    line saying what the command kept)."""
    from fedtopic.allocator import keep_freed_buffers
    from fedtopic.errors import FedTopicError

    keep_freed_buffers()
    interrupted = _catch_interrupts()
    try:
        result = app(args=argv, prog_name="fedtopic", standalone_mode=False)
        if interrupted:  # typer answers Ctrl-C with exit code 130 and no word: say it, and what was kept
            return _interrupted()
    except FedTopicError as exc:
        typer.secho(f"error: {exc}", err=True, fg="red")
        return 2
    except click_errors.UsageError as exc:
        if not exc.format_message():  # no_args_is_help: the help is already shown
            return exc.exit_code
        where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
        typer.secho(f"error: {exc.format_message()}{where}", err=True, fg="red")
        return 2
    except click_errors.ClickException as exc:
        typer.secho(f"error: {exc.format_message()}", err=True, fg="red")
        return exc.exit_code
    except OSError as exc:  # a path the user named: a missing folder, no permission, a full disk, a lost peer
        typer.secho(f"error: {_os_error(exc)}", err=True, fg="red")
        return 2
    except (typer.Abort, KeyboardInterrupt):
        return _interrupted()
    except SystemExit as exc:  # e.g. rich on a closed pipe
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        from fedtopic.runs.folder_lock import release_folders

        _stop_catching_interrupts()
        release_folders()  # a command run in process (tests, notebooks) gives its folders back when it returns
    return result if isinstance(result, int) else 0


def _catch_interrupts() -> list[bool]:
    """In the main thread, under Python's own Ctrl-C handler: note every SIGINT (then raise KeyboardInterrupt as
    that handler does). The list is non-empty once one came."""
    import signal
    import threading

    seen: list[bool] = []
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        def on_sigint(signum: int, frame: object) -> None:
            seen.append(True)
            signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C is Python's own
            raise KeyboardInterrupt

        signal.signal(signal.SIGINT, on_sigint)
    return seen


def _stop_catching_interrupts() -> None:
    """Give Ctrl-C back to Python's own handler (a command run in process: tests, notebooks)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread() and \
            getattr(signal.getsignal(signal.SIGINT), "__name__", "") == "on_sigint":
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _interrupted() -> int:
    """Say in one line that the command was interrupted and what it kept; exit code 130."""
    from fedtopic.runs.interrupted import take_kept

    _stop_catching_interrupts()
    kept = take_kept()
    print(f"interrupted: {'; '.join(kept) if kept else 'nothing was kept'}", file=sys.stderr, flush=True)
    return 130


def _os_error(exc: OSError) -> str:
    """An OSError in one line: what failed and on which path."""
    what = exc.strerror or type(exc).__name__
    return f"{what}: {exc.filename}" if exc.filename else " ".join(str(exc).split()) or what


def run() -> None:
    """The installed `fedtopic` script."""
    sys.exit(main())


if __name__ == "__main__":
    run()
