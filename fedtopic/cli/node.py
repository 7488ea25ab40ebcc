"""`fedtopic node run`: one party of a consortium in its own process."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from fedtopic.algorithms.dafed import RoundReport
from fedtopic.cli.output import FormatOption, OutputFormat, print_json, stderr_console, stdout_console
from fedtopic.errors import ConfigError
from fedtopic.node.async_loop import PartyLog
from fedtopic.node.config import load_consortium
from fedtopic.node.dafed_node import run_dafed_node

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
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Train this party: DAFed-LDA over the chain (resumes from its checkpoint after a crash)."""
    cfg = load_consortium(config)
    if cfg.algorithm.name != "dafed-lda":
        raise ConfigError(f"algorithm.name = {cfg.algorithm.name!r}: `fedtopic node run` trains dafed-lda over the chain")

    def say(msg: str) -> None:
        stderr_console.print(msg)

    def on_round(pid: str, report: RoundReport, log: PartyLog) -> None:
        stale = " ".join(f"{q}:{s}" for q, s in sorted(report.staleness.items()))
        say(f"{pid} round {report.round} ({report.sweeps}/{cfg.algorithm.iterations} sweeps) staleness {stale or '-'}")

    summary = run_dafed_node(cfg, config, party, key_file=key, corpus=corpus, vocab=vocab, rpc=rpc, state_dir=state,
                             genesis_timeout=genesis_timeout, say=say, on_round=on_round)
    if fmt is OutputFormat.json:
        print_json(summary)
        return
    stdout_console.print(f"party {party}: {summary['rounds']} rounds ({summary['stopped_by']}), held-out perplexity "
                         f"{summary['perplexity']:.1f}; θ_p and Φ_Σ in {summary['run']}")
