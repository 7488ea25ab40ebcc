"""`fedtopic node run`: one party of a consortium in its own process."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from fedtopic.algorithms.dafed import RoundReport
from fedtopic.cli.output import (
    FormatOption,
    OutputFormat,
    print_json,
    stderr_console,
    stdout_console,
)
from fedtopic.consortium.config import load_consortium
from fedtopic.errors import ConfigError
from fedtopic.node.async_loop import PartyLog
from fedtopic.node.csfed_loop import RoundRecord
from fedtopic.node.csfed_node import run_csfed_node
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
    url: Annotated[Optional[str], typer.Option(help="csfed-lda: aggregator URL (default: aggregator.url of the config)")] = None,
    session: Annotated[Optional[str], typer.Option(help="csfed-lda: training session id (default: derived from the config)")] = None,
    round_timeout: Annotated[float, typer.Option(help="csfed-lda: seconds to wait for one round's aggregate")] = 3600.0,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Train this party: DAFed-LDA over the chain or CSFed-LDA through the aggregator (``algorithm.name``);
    resumes from its checkpoint after a crash."""
    cfg = load_consortium(config)
    if cfg.algorithm.name not in ("dafed-lda", "csfed-lda"):
        raise ConfigError(f"algorithm.name = {cfg.algorithm.name!r}: `fedtopic node run` trains dafed-lda (chain) "
                          "or csfed-lda (aggregator)")

    def say(msg: str) -> None:
        stderr_console.print(msg)

    if cfg.algorithm.name == "csfed-lda":
        def on_record(rec: RoundRecord) -> None:
            extra = " (recovery sent)" if rec.recovery_sent else ""
            say(f"{party} round {rec.round}: aggregate of {', '.join(rec.contributors)}{extra}")

        summary = run_csfed_node(cfg, config, party, key_file=key, corpus=corpus, vocab=vocab, url=url,
                                 state_dir=state, session=session, round_timeout=round_timeout, say=say,
                                 on_round=on_record)
        _report(summary, party, fmt)
        return

    def on_round(pid: str, report: RoundReport, log: PartyLog) -> None:
        stale = " ".join(f"{q}:{s}" for q, s in sorted(report.staleness.items()))
        say(f"{pid} round {report.round} ({report.sweeps}/{cfg.algorithm.iterations} sweeps) staleness {stale or '-'}")

    summary = run_dafed_node(cfg, config, party, key_file=key, corpus=corpus, vocab=vocab, rpc=rpc, state_dir=state,
                             genesis_timeout=genesis_timeout, say=say, on_round=on_round)
    _report(summary, party, fmt)


def _report(summary: dict, party: str, fmt: OutputFormat) -> None:
    if fmt is OutputFormat.json:
        print_json(summary)
        return
    stopped = f" ({summary['stopped_by']})" if "stopped_by" in summary else ""
    stdout_console.print(f"party {party}: {summary['rounds']} rounds{stopped}, held-out perplexity "
                         f"{summary['perplexity']:.1f}; θ_p and Φ_Σ in {summary['run']}")
