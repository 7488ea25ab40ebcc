"""`fedtopic node run`: one party of a consortium in its own process."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from fedtopic.cli.output import (
    FormatOption,
    OutputFormat,
    print_json,
    print_warnings,
    stderr_console,
    stdout_console,
)

if TYPE_CHECKING:
    from fedtopic.algorithms.asynchronous import PartyLog, RoundReport
    from fedtopic.runs.history import HistoryLine

app = typer.Typer(help="Run one party of a consortium.", no_args_is_help=True)


@app.command("run")
def run_command(
    config: Annotated[Path, typer.Option(help="the consortium's consortium.toml")],
    party: Annotated[str, typer.Option(help="this party's id")],
    key: Annotated[Optional[Path], typer.Option(help="this party's private key file (default: keys/<party>.key.json beside the config)")] = None,
    corpus: Annotated[Optional[Path], typer.Option(help="this party's own documents (needs --vocab); default: its share of data.dataset")] = None,
    vocab: Annotated[Optional[Path], typer.Option(help="the consortium's shared vocabulary (JSON) for --corpus")] = None,
    rpc: Annotated[Optional[str], typer.Option(help="chain JSON-RPC URL (default: chain.rpc of the config)")] = None,
    state: Annotated[Optional[Path], typer.Option(help="checkpoint and model folder (default: state/<party> beside the config)")] = None,
    genesis_timeout: Annotated[float, typer.Option(help="seconds to wait for the other parties' first publication")] = 600.0,
    url: Annotated[Optional[str], typer.Option(help="synchronous algorithms: aggregator URL (default: aggregator.url of the config)")] = None,
    link: Annotated[Optional[str], typer.Option(help="synchronous algorithms: the link this party's requests travel by (`fedtopic algorithms --links`; default: aggregator.link of the config, http)")] = None,
    session: Annotated[Optional[str], typer.Option(help="synchronous algorithms: training session id (default: derived from the config)")] = None,
    round_timeout: Annotated[float, typer.Option(help="synchronous algorithms: seconds to wait for one round's aggregate")] = 3600.0,
    behind_rounds: Annotated[int, typer.Option(min=1, help="asynchronous algorithms: a peer more rounds behind this party than this is reported (status line, history, summary)")] = 10,
    behind_seconds: Annotated[float, typer.Option(min=1.0, help="asynchronous algorithms: a peer with no new round for this long is reported likewise")] = 300.0,
    if_behind: Annotated[str, typer.Option(help="asynchronous algorithms: go-on (train on with the peer's last counts, said once) or wait (pause until it is back, at most --patience seconds); synchronous algorithms go on without a late party only after the consortium's aggregator.straggler_deadline_seconds")] = "go-on",
    insecure: Annotated[bool, typer.Option("--insecure", help="allow plain HTTP to an aggregator that is not on loopback, or HTTPS without checking its certificate")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="start a new run: set this party's state folder aside (renamed <folder>.old-<time>, never deleted); synchronous algorithms also leave an unfinished earlier session for a new one")] = False,
    run: Annotated[Optional[int], typer.Option(min=1, help="asynchronous algorithms: the consortium's run to take part in (default: the next one after this party's last with --fresh, else the state folder's); a party joining a consortium already past run 1 gives it")] = None,
    patience: Annotated[float, typer.Option(min=0.0, help="seconds to keep retrying an unreachable aggregator or chain (it may be restarting), at every place in the loop")] = 600.0,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Train this party with the consortium's algorithm (``algorithm.name``): asynchronous ones over the chain,
    synchronous ones through the aggregator; resumes from its checkpoint after a crash."""
    from fedtopic.algorithms.base import Mode
    from fedtopic.algorithms.registry import algorithms_for, get_algorithm
    from fedtopic.consortium.config import load_consortium
    from fedtopic.errors import ConfigError
    from fedtopic.runs.folder_lock import hold_folder
    from fedtopic.runs.private import keep_private

    cfg = load_consortium(config)
    state_folder = state if state is not None else config.parent / "state" / party
    keep_private(state_folder)  # its data, counts, model, history
    hold_folder(state_folder, f"node run --party {party}")  # one process per state folder
    algorithm = get_algorithm(cfg.algorithm.name)
    if not algorithm.modes & {Mode.sync, Mode.async_}:
        raise ConfigError(f"algorithm.name = {algorithm.name!r} has no federated mode; `fedtopic node run` trains "
                          f"{', '.join(algorithms_for(Mode.sync) + algorithms_for(Mode.async_))}")
    if link is not None:
        if Mode.sync not in algorithm.modes:
            raise ConfigError(f"--link: {algorithm.name} is asynchronous; its parties meet on the chain that "
                              "chain.rpc names, not through a link")
        from fedtopic.links import get_link

        get_link(link, "sync")
        cfg = cfg.model_copy(update={"aggregator": cfg.aggregator.model_copy(update={"link": link})})

    def say(msg: str) -> None:
        stderr_console.print(msg, highlight=False, soft_wrap=True)  # one line per message, also in a log file

    from fedtopic.ledger.rpc import configure_retries
    from fedtopic.network.tls import configure_trust

    configure_retries(patience, say)  # every chain call of this node waits out an outage as its aggregator client does
    configure_trust(cfg.aggregator.tls_cert_file(config.parent), insecure)
    common = {"key_file": key, "corpus": corpus, "vocab": vocab, "url": url, "state_dir": state, "session": session,
              "round_timeout": round_timeout, "patience": patience, "say": say, "fresh": fresh}
    if Mode.sync in algorithm.modes:
        from fedtopic.node.sync_node import run_sync_node

        total, setup = algorithm.rounds(cfg.algorithm.spec()), algorithm.setup_rounds(cfg.algorithm.spec())
        summary = run_sync_node(cfg, config, party, **common,
                                on_round=lambda line: say(round_line(line, total, setup)))
        without = summary.get("rounds_without") or {}
        lagged = "" if not without else "; went on without " + ", ".join(
            f"{p} in {n} round{'s' * (n != 1)}" for p, n in sorted(without.items())) + \
            f" (straggler deadline {summary['straggler_deadline_seconds']:g} s)"
        _finish(summary, fmt, f"party {party}: {summary['rounds']} rounds, {algorithm.headline(summary)}{lagged}")
        return

    from fedtopic.node.async_loop import Liveness
    from fedtopic.node.async_node import run_async_node

    def on_round(pid: str, report: RoundReport, log: PartyLog) -> None:
        stale = " ".join(f"{q}:{s}" for q, s in sorted(report.staleness.items()))
        spent = "" if report.epsilon is None else f"; ε spent {report.epsilon:.4g}"
        say(f"{pid} round {report.round} ({report.sweeps}/{cfg.algorithm.iterations} sweeps) staleness {stale or '-'}{spent}")

    if if_behind not in ("go-on", "wait"):
        raise ConfigError(f"--if-behind is go-on or wait, not {if_behind!r}")
    liveness = Liveness(rounds=behind_rounds, seconds=behind_seconds, wait=if_behind == "wait", wait_limit=patience)
    summary = run_async_node(cfg, config, party, key_file=key, corpus=corpus, vocab=vocab, rpc=rpc, state_dir=state,
                             genesis_timeout=genesis_timeout, say=say, on_round=on_round, fresh=fresh,
                             liveness=liveness, run=run)
    _report(summary, party, fmt)


def _plots(summary: dict) -> None:
    """The party's history PNGs beside its model (``state/<party>/model``; the history is one folder up)."""
    from fedtopic.eval.history_plots import plot_history
    from fedtopic.runs.history import FILE_NAME, latest_per_round, read_history

    model = Path(summary["run"])
    rows = latest_per_round(read_history(model.parent / FILE_NAME))
    plot_history(model, {str(summary.get("party", "party")): rows}, title=str(summary.get("algorithm", "")))


def _finish(summary: dict, fmt: OutputFormat, line: str) -> None:
    """The node's summary as JSON, or ``line`` and where the model is."""
    _plots(summary)
    print_warnings(summary, summary.get("run"))
    if fmt is OutputFormat.json:
        print_json(summary)
    else:
        stdout_console.print(f"{line}; in {summary['run']}")


def _report(summary: dict, party: str, fmt: OutputFormat) -> None:
    _plots(summary)
    print_warnings(summary, summary.get("run"))
    if fmt is OutputFormat.json:
        print_json(summary)
        return
    stopped = f" ({summary['stopped_by']})" if "stopped_by" in summary else ""
    behind = summary.get("peers_behind") or {}
    lagged = "" if not behind else (
        f"; {'waited for' if summary.get('if_behind') == 'wait' else 'went on without waiting for'} "
        + ", ".join(f"{p} (up to {n} rounds behind)" for p, n in sorted(behind.items())))
    short = summary.get("short_of_planned_sweeps") or 0
    shortfall = "" if not short else (f"; its own model rests on {summary['sweeps']} of {summary['planned_sweeps']} "
                                      "sweeps (a party it reads finished first, which ends everyone's training)")
    stdout_console.print(f"party {party}: {summary['rounds']} rounds{stopped}, held-out perplexity "
                         f"{summary['perplexity']:.1f}{lagged}{shortfall}; its θ and the consortium's Φ in "
                         f"{summary['run']}", soft_wrap=True)


def round_line(line: HistoryLine, total: int, setup: int = 0) -> str:
    """One status line for a finished round of a synchronous party (``total``: the training rounds of the whole
    run, ``setup``: the exchanges before them; ``runs.round_count``)."""
    from fedtopic.runs.round_count import round_label

    quality = "" if line.quality is None else f", {line.quality_name} {line.quality:.4g}"
    recovery = " (recovery sent)" if line.recoveries else ""
    spent = "" if line.epsilon is None else f", ε spent {line.epsilon:.4g}"
    who = "" if line.contributors is None else f", aggregate of {', '.join(line.contributors)}"
    seconds = line.compute_s + line.exchange_s + line.wait_s
    return (f"{line.party} {round_label(line.round, setup, total)}: {seconds:.1f} s (computing "
            f"{line.compute_s:.1f}, waiting {line.wait_s:.1f}){quality}{who}{recovery}{spent}")
