"""`fedtopic demo`: the main job — a DAFed-LDA consortium on an embedded chain, with its baselines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from fedtopic.cli.live import PartyBoard
from fedtopic.cli.output import (
    FormatOption,
    OutputFormat,
    print_json,
    stderr_console,
    stdout_console,
)
from fedtopic.consortium.init import party_ids
from fedtopic.corpus.training_data import load_training_data
from fedtopic.experiments.demo import DemoOptions, run_demo
from fedtopic.runs.folder import prepare_run_dir


def demo(
    dataset: Annotated[str, typer.Option(help="built-in dataset split evenly among the parties")] = "bbc-news",
    parties: Annotated[int, typer.Option(min=2, help="number of parties")] = 5,
    topics: Annotated[int, typer.Option("--topics", "-k", min=2, help="number of topics K")] = 20,
    iterations: Annotated[int, typer.Option(min=1, help="sweeps (training ends when the fastest party reaches them)")] = 100,
    max_delay: Annotated[float, typer.Option(min=0.0, help="random per-round delay U(0, max) seconds (paper §8.1)")] = 0.02,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    out: Annotated[Path, typer.Option(help="run folder")] = Path("runs/demo"),
    overwrite: Annotated[bool, typer.Option(help="replace an existing run in --out")] = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Train DAFed-LDA over per-party channel contracts on an embedded chain; compare with centralized and stand-alone LDA."""
    opts = DemoOptions(dataset=dataset, parties=parties, topics=topics, iterations=iterations, max_delay=max_delay, seed=seed)
    run_dir = prepare_run_dir(out, overwrite=overwrite)
    data = load_training_data(dataset=dataset, corpus=None, n_parties=parties, scheme="a", seed=seed)
    say = (lambda msg: stderr_console.print(f"[bold cyan]»[/] {msg}")) if fmt is OutputFormat.text else (lambda msg: None)
    say(f"{dataset}: {data.train.n_docs:,} training documents split among {parties} parties, {data.test.n_docs:,} held out, V={data.train.n_words:,}")
    with PartyBoard(party_ids(parties), iterations, title=f"DAFed-LDA on the embedded chain (K={topics})") as live:
        report = run_demo(data, opts, run_dir, on_round=live.on_round, on_stage=say)
    if fmt is OutputFormat.json:
        print_json(report | {"run": str(run_dir)})
        return
    _print_report(report, run_dir)


def _print_report(report: dict, run_dir: Path) -> None:
    topics = Table("topic", "top words (DAFed-LDA, party p1's consortium Φ)", title="Topics")
    for t in json.loads((run_dir / "topics.json").read_text()):
        topics.add_row(str(t["topic"]), " ".join(t["words"]))
    stdout_console.print(topics)
    table = Table("model", "held-out perplexity", "Eq. 16", "NPMI", "diversity", "macro-F1", "seconds", title="Held-out comparison")
    for name, r in report["comparison"].items():
        f1 = "-" if r.get("macro_f1") is None else f"{r['macro_f1']:.3f}"
        table.add_row(name, f"{r['perplexity']:.1f}", f"{r['perplexity_eq16']:.1f}", f"{r['npmi']:.3f}", f"{r['topic_diversity']:.2f}", f1, f"{r['wall_seconds']:.1f}")
    stdout_console.print(table)
    hist = ", ".join(f"{k}: {v}" for k, v in sorted(report["staleness_histogram"].items(), key=lambda kv: int(kv[0])))
    stdout_console.print(
        f"DAFed-LDA vs centralized: {100 * report['dafed_vs_centralized_perplexity_gap']:+.1f} % perplexity. "
        f"On chain: {report['chain_transactions']:,} transactions, {report['chain_calldata_bytes']:,} calldata bytes, "
        f"{report['chain_gas_used']:,} gas; {report['bytes_sent']:,} payload bytes published.\n"
        f"Staleness of the counts parties used (rounds behind: reads; negative: the other party was ahead): {hist}\n"
        f"Run folder: {run_dir} — summary.json, topics.json, comparison.png, dafed/ (staleness.png, rounds.png), "
        f"centralized/ (perplexity.png), standalone/"
    )
