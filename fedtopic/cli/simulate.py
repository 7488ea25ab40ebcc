"""`fedtopic simulate`: a whole DAFed-LDA consortium in one process."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from fedtopic.algorithms.baselines import LDAHyper
from fedtopic.cli.live import PartyBoard
from fedtopic.cli.output import (
    FormatOption,
    OutputFormat,
    print_json,
    stderr_console,
    stdout_console,
)
from fedtopic.consortium.config import PROTECTIONS, converge_tol_of, load_consortium
from fedtopic.consortium.init import cp_from_consortia, party_ids
from fedtopic.corpus.training_data import load_training_data
from fedtopic.errors import ConfigError
from fedtopic.node.transport import ChannelTransport, InMemoryBoard
from fedtopic.runs.folder import prepare_run_dir
from fedtopic.simulation.chain_setup import chain_usage, embedded_consortium
from fedtopic.simulation.csfed_loopback import simulate_csfed
from fedtopic.simulation.dafed_run import write_dafed_run
from fedtopic.simulation.threads import run_simulation


def simulate(
    config: Annotated[Optional[Path], typer.Option(help="take parties, CP, algorithm, data and protection from a consortium.toml (other training flags are then ignored)")] = None,
    dataset: Annotated[str, typer.Option(help="built-in dataset split among the parties")] = "bbc-news",
    parties: Annotated[int, typer.Option(min=1, help="number of parties P")] = 5,
    scheme: Annotated[str, typer.Option(help="partition: a even, b unbalanced, c by label, dirichlet")] = "a",
    topics: Annotated[int, typer.Option("--topics", "-k", min=2, help="number of topics K")] = 20,
    iterations: Annotated[int, typer.Option(min=1, help="stop when the fastest party has done this many sweeps")] = 100,
    steps: Annotated[int, typer.Option(min=1, help="multi-step: local sweeps between publications")] = 1,
    max_delay: Annotated[float, typer.Option(min=0.0, help="random per-round delay U(0, max) seconds (paper §8.1)")] = 0.05,
    alpha: Annotated[Optional[float], typer.Option(help="document-topic prior (default 50/K)")] = None,
    beta: Annotated[float, typer.Option(help="topic-word prior")] = 0.01,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    converge_tol: Annotated[Optional[float], typer.Option(min=0.0, help="dafed-lda: a party also stops when fewer than this fraction of its tokens changed topic in a round")] = None,
    transport: Annotated[str, typer.Option(help="memory (in-process board) or chain (embedded EVM chain, encrypted channels)")] = "memory",
    algorithm: Annotated[str, typer.Option(help="dafed-lda (channels, asynchronous) or csfed-lda (aggregator on loopback, synchronous)")] = "dafed-lda",
    protection: Annotated[str, typer.Option(help="csfed-lda: none, paillier-iphe, paillier-uphe, paillier-packed or mask")] = "none",
    delta: Annotated[float, typer.Option(min=0.0, max=1.0, help="csfed-lda IPHE/UPHE: encrypted fraction of the vocabulary")] = 0.005,
    key_bits: Annotated[int, typer.Option(help="csfed-lda: Paillier key size")] = 2048,
    compare_centralized: Annotated[bool, typer.Option(help="csfed-lda: also train centralized LDA with the same sweeps and report the perplexity gap")] = False,
    out: Annotated[Path, typer.Option(help="run folder to write")] = Path("runs/simulate"),
    overwrite: Annotated[bool, typer.Option(help="replace an existing run in --out")] = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """DAFed-LDA with P concurrent parties over an in-memory board or an embedded chain, or CSFed-LDA with
    P parties and a real aggregator process on loopback."""
    ids, cp = party_ids(parties), None
    if config is not None:
        cfg = load_consortium(config)
        if cfg.data.dataset is None:
            raise ConfigError(f"{config}: data.dataset is not set; a simulation splits a built-in dataset among the parties")
        a, agg = cfg.algorithm, cfg.aggregator
        algorithm, topics, iterations, steps, alpha, beta, seed = a.name, a.topics, a.iterations, a.steps, a.alpha, a.beta, a.seed
        max_delay = a.random_delay[1]
        dataset, scheme, parties = cfg.data.dataset, cfg.data.scheme, len(cfg.parties)
        protection, delta, key_bits = agg.protection, agg.delta, agg.key_bits
        ids, cp = list(cfg.party_ids), dict(cfg.cp)
        converge_tol = converge_tol_of(cfg)
    if algorithm not in ("dafed-lda", "csfed-lda"):
        raise ConfigError(f"unknown --algorithm {algorithm!r}: choose dafed-lda or csfed-lda")
    if protection not in PROTECTIONS:
        raise ConfigError(f"unknown --protection {protection!r}: choose one of {', '.join(PROTECTIONS)}")
    if algorithm == "csfed-lda":
        _csfed(dataset, parties, scheme, topics, iterations, steps, alpha, beta, seed, protection, delta, key_bits,
               compare_centralized, out, overwrite, fmt)
        return
    if transport not in ("memory", "chain"):
        raise ConfigError(f"unknown --transport {transport!r}: choose memory or chain")
    run_dir = prepare_run_dir(out, overwrite=overwrite)
    data = load_training_data(dataset=dataset, corpus=None, n_parties=parties, scheme=scheme, seed=seed)
    hyper = LDAHyper(n_topics=topics, iterations=iterations, alpha=alpha, beta=beta, seed=seed)
    cp = cp if cp is not None else cp_from_consortia([ids])
    shape = (data.train.n_words, topics)
    extra: dict[str, object] = {"transport": transport, "schedule": "threads"}
    if transport == "chain":
        chain = embedded_consortium(ids, cp, shape, seed=seed)
        transports: list[ChannelTransport] = list(chain.channels)
    else:
        board = InMemoryBoard(cp)
        transports = [board.channel(pid, shape) for pid in ids]
    with PartyBoard(ids, iterations, title=f"DAFed-LDA on {dataset}: {parties} parties, K={topics}") as live:
        sim = run_simulation(data.parties, hyper, transports, cp, steps=steps, max_delay=max_delay, on_round=live.on_round,
                             converge_tol=converge_tol)
    if transport == "chain":
        usage = chain_usage(chain.w3, chain.first_block)
        extra |= {"chain_transactions": usage.transactions, "chain_calldata_bytes": usage.calldata_bytes, "chain_gas_used": usage.gas_used}
    summary = write_dafed_run(data, hyper, sim, run_dir, steps=steps, max_delay=max_delay, extra=extra)
    if fmt is OutputFormat.json:
        print_json(summary | {"run": str(run_dir)})
        return
    stdout_console.print(
        f"[bold]dafed-lda[/] on {dataset}: perplexity {summary['perplexity']:.1f} (mean over parties), "
        f"NPMI {summary['npmi']:.3f}, {summary['bytes_sent']:,} bytes published, {summary['wall_seconds']:.1f} s"
    )
    stdout_console.print(f"run folder: {run_dir}")


def _csfed(dataset: str, parties: int, scheme: str, topics: int, iterations: int, steps: int, alpha: float | None,
           beta: float, seed: int, protection: str, delta: float, key_bits: int, compare_centralized: bool,
           out: Path, overwrite: bool, fmt: OutputFormat) -> None:
    run_dir = prepare_run_dir(out, overwrite=overwrite)
    data = load_training_data(dataset=dataset, corpus=None, n_parties=parties, scheme=scheme, seed=seed)
    hyper = LDAHyper(n_topics=topics, iterations=iterations, alpha=alpha, beta=beta, seed=seed)
    with stderr_console.status(f"CSFed-LDA on {dataset}: {parties} parties, {protection}") as status:
        summary = simulate_csfed(data, hyper, run_dir, protection=protection, steps=steps, delta=delta,
                                 key_bits=key_bits, seed=seed, compare_centralized=compare_centralized,
                                 say=lambda msg: status.update(msg))
    if fmt is OutputFormat.json:
        print_json(summary | {"run": str(run_dir)})
        return
    gap = (f"; centralized {summary['centralized_perplexity']:.1f} "
           f"({100 * summary['perplexity_gap_vs_centralized']:+.2f} %)") if compare_centralized else ""
    stdout_console.print(f"[bold]csfed-lda[/] ({protection}) on {dataset}: perplexity {summary['perplexity']:.1f}"
                         f"{gap}, {summary['rounds']} rounds, {summary['wall_seconds']:.1f} s")
    stdout_console.print(f"run folder: {run_dir}")
