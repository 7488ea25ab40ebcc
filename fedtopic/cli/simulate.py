"""`fedtopic simulate`: a whole consortium in one command, for any federated algorithm.

Asynchronous algorithms run their parties as threads over an in-memory board
or encrypted channels on an embedded chain; synchronous ones run a real
aggregator process on loopback with the parties as threads over HTTP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from fedtopic.cli.algo_options import OptOption
from fedtopic.cli.corpus_options import (
    EncodingOption,
    HoldoutOption,
    MaxDfOption,
    MinDfOption,
    StopwordsOption,
    TestCorpusOption,
    corpus_reading,
)
from fedtopic.cli.output import (
    FormatOption,
    OutputFormat,
    count_parties,
    print_json,
    print_warnings,
    stderr_console,
    stdout_console,
)
from fedtopic.runs.folder import add_to_summary


def simulate(
    config: Annotated[Optional[Path], typer.Option(help="take parties, CP, algorithm (with its options), data and protection from a consortium.toml (the other training flags are then ignored)")] = None,
    algorithm: Annotated[str, typer.Option(help="a federated algorithm (see `fedtopic algorithms`): dafed-lda runs asynchronously over channels, csfed-lda synchronously through an aggregator on loopback")] = "dafed-lda",
    dataset: Annotated[Optional[str], typer.Option(help="built-in dataset split among the parties (default bbc-news)")] = None,
    corpus: Annotated[Optional[Path], typer.Option(help="your own documents (a folder of .txt, a .jsonl, or a UCI docword file), split among the parties by --scheme")] = None,
    parties: Annotated[int, typer.Option(min=1, help="number of parties P")] = 5,
    scheme: Annotated[str, typer.Option(help="partition: a even, b unbalanced, c by label, dirichlet")] = "a",
    dirichlet_alpha: Annotated[float, typer.Option(min=1e-6, help="scheme dirichlet: label proportions q ~ Dir(α·p) per party (small α: one label each; FedNMF paper §IV-D uses 1)")] = 0.5,
    max_vocabulary: Annotated[Optional[int], typer.Option(min=1, help="keep the N words of highest document frequency pooled over the parties, everywhere (gFedNTM's vocabulary consensus; contextualized-topic-models keeps 2,000)")] = None,
    min_df: MinDfOption = 2,
    max_df: MaxDfOption = 0.5,
    stopwords: StopwordsOption = "english",
    encoding: EncodingOption = "utf-8",
    holdout: HoldoutOption = None,
    test_corpus: TestCorpusOption = None,
    topics: Annotated[int, typer.Option("--topics", "-k", min=2, help="number of topics K")] = 20,
    iterations: Annotated[int, typer.Option(min=1, help="training iterations (for dafed-lda: until the fastest party has done this many sweeps)")] = 100,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    opt: OptOption = [],  # noqa: B006
    max_delay: Annotated[float, typer.Option(min=0.0, help="asynchronous: random per-round delay U(0, max) seconds (paper §8.1)")] = 0.05,
    link: Annotated[Optional[str], typer.Option("--link", "--transport", help="how messages travel (`fedtopic algorithms --links`): synchronous http (the default) or a plugin's; asynchronous memory (in-process board, the default), chain (embedded EVM chain, encrypted channels) or a plugin's. --transport is its earlier name")] = None,
    protection: Annotated[str, typer.Option(help="synchronous: a registered protection (none, paillier-iphe, paillier-uphe, paillier-packed, mask, or a plugin's; `fedtopic algorithms --protections`)")] = "none",
    delta: Annotated[float, typer.Option(min=0.0, max=1.0, help="paillier-iphe/uphe: encrypted fraction of the vocabulary")] = 0.005,
    key_bits: Annotated[int, typer.Option(help="Paillier key size")] = 2048,
    compare_centralized: Annotated[bool, typer.Option(help="synchronous: also train centralized LDA with the same sweeps and report the perplexity gap")] = False,
    port: Annotated[int, typer.Option(min=0, max=65535, help="synchronous: the aggregator's port on 127.0.0.1 (0: a free one)")] = 0,
    aggregator_host: Annotated[str, typer.Option(help="--engine ray across machines: the address of this machine the aggregator listens on, which the cluster's other nodes reach (default 127.0.0.1: every node on this machine)")] = "127.0.0.1",
    engine: Annotated[str, typer.Option(help="where the parties run: threads (this process; the default), ray (a Ray cluster: pip install 'fedtopic[cluster]'), or a plugin engine's name")] = "threads",
    address: Annotated[Optional[str], typer.Option(help="--engine ray: the cluster to join (auto, or HEAD:6379); default a local Ray for this run")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", help="the engine's own log lines too (Ray's)")] = False,
    out: Annotated[Path, typer.Option(help="run folder to write")] = Path("runs/simulate"),
    overwrite: Annotated[bool, typer.Option(help="replace an existing run in --out")] = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Simulate a consortium: P parties train one topic model with a federated algorithm."""
    from fedtopic.algorithms.base import Mode, metric, parse_opt_pairs
    from fedtopic.algorithms.registry import get_algorithm
    from fedtopic.consortium.config import load_consortium
    from fedtopic.consortium.init import party_ids
    from fedtopic.errors import ConfigError

    ids, cp = party_ids(parties), None
    options: dict[str, object] = parse_opt_pairs(opt)
    where = "--opt"
    if config is not None:
        cfg = load_consortium(config)
        if cfg.data.dataset is None:
            raise ConfigError(f"{config}: data.dataset is not set; a simulation splits a built-in dataset among the parties")
        a, agg = cfg.algorithm, cfg.aggregator
        algorithm, topics, iterations, seed, options = a.name, a.topics, a.iterations, a.seed, dict(a.options)
        max_delay, where = a.random_delay[1], f"{config}: algorithm.options"
        dataset, corpus, scheme, parties = cfg.data.dataset, None, cfg.data.scheme, len(cfg.parties)
        dirichlet_alpha = cfg.data.dirichlet_alpha
        protection, delta, key_bits = agg.protection, agg.delta, agg.key_bits
        ids, cp = list(cfg.party_ids), dict(cfg.cp)
    spec = get_algorithm(algorithm).spec(topics, iterations, seed, options, where=where)
    if dataset is not None and corpus is not None:
        raise ConfigError("give --dataset or --corpus, not both")
    if dataset is None and corpus is None:
        dataset = "bbc-news"
    from fedtopic.corpus.training_data import load_training_data
    from fedtopic.runs.folder import prepare_run_dir
    from fedtopic.simulation.run import (
        AsyncSettings,
        Harness,
        SyncSettings,
        check_simulation,
        simulate_run,
    )

    harness = Harness(ids=ids, cp=cp, engine=engine, engine_address=address, engine_verbose=verbose, link=link,
                      sync=SyncSettings(protection=protection, delta=delta, key_bits=key_bits,
                                        compare_centralized=compare_centralized, port=port, host=aggregator_host),
                      async_=AsyncSettings(max_delay=max_delay))
    algo = check_simulation(algorithm, spec, harness, len(ids))  # every refusal before any data is loaded
    run_dir = prepare_run_dir(out, overwrite=overwrite)
    data = load_training_data(dataset=dataset, corpus=corpus, n_parties=len(ids), scheme=scheme, seed=seed,
                              dirichlet_alpha=dirichlet_alpha, max_vocabulary=max_vocabulary,
                              reading=corpus_reading(min_df, max_df, stopwords, encoding), holdout=holdout,
                              test_corpus=test_corpus)
    algo.check_data(data.parties, spec)
    told = [fmt is OutputFormat.json]  # what it trains on is said once the run starts: a refusal stays one line

    def tell() -> None:
        if not told[0]:
            told[0] = True
            stderr_console.print(data.describe(), highlight=False, soft_wrap=True)

    if Mode.sync in algo.modes:
        from fedtopic.cli.progress import RoundProgress

        title = f"{algorithm} ({protection}), {count_parties(len(ids))}"
        with RoundProgress(title, algo.rounds(spec), ids, setup=algo.setup_rounds(spec)) as progress:
            def say(message: str) -> None:
                tell()
                progress.say(message)

            summary = simulate_run(data, algorithm, spec, run_dir, harness, say=say, on_round=progress.on_line)
        gap = (f"; centralized {summary['centralized_perplexity']:.1f} "
               f"({100 * summary['perplexity_gap_vs_centralized']:+.2f} %)") if compare_centralized else ""
        line = (f"[bold]{algorithm}[/] ({protection}) on {data.name}: {algo.headline(summary)}{gap}, "
                f"{summary['rounds']} rounds, {summary['wall_seconds']:.1f} s{_spent(summary)}")
    else:
        from fedtopic.cli.live import PartyBoard

        title = f"{algorithm} on {data.name}: {count_parties(len(ids))}, K={spec.topics}"
        with PartyBoard(ids, spec.iterations, title=title) as live:
            summary = simulate_run(data, algorithm, spec, run_dir, harness, on_round=live.on_round)
        tell()
        line = (f"[bold]{algorithm}[/] on {data.name}: {algo.headline(summary)} ({_model_of(summary)}), "
                f"NPMI {metric(summary, 'npmi', '.3f')}, {summary['bytes_sent']:,} bytes published, "
                f"{summary['wall_seconds']:.1f} s{_spent(summary)}")
    summary["held_out"] = data.held_out  # what the held-out figures were scored on
    add_to_summary(run_dir, held_out=data.held_out)
    print_warnings(summary, run_dir)
    if fmt is OutputFormat.json:
        print_json(summary | {"run": str(run_dir)})
        return
    stdout_console.print(line, highlight=False)
    stdout_console.print(f"run folder: {run_dir}", highlight=False)


def _model_of(summary: dict) -> str:
    """Whose model the figures are: "p1's Φ_Σ, the model written", and the other parties' range where it differs."""
    if "model_of" not in summary:  # an asynchronous plugin's writer that does not say
        return "the model written"
    own = f"{summary['model_of']}'s Φ_Σ, the model written"
    figures = [d["perplexity"] for d in summary.get("parties_detail") or [] if isinstance(d.get("perplexity"), float)]
    if len(figures) > 1 and max(figures) - min(figures) > 1e-6 * max(figures):
        own += f"; the parties' models {min(figures):.1f}–{max(figures):.1f}"
    return own


def _spent(summary: dict) -> str:
    """", ε ≤ 4.21 per party (δ = 1e-05)" for a run whose releases were differentially private; "" otherwise."""
    spent = [p for p in (summary.get("privacy") or {}).values() if isinstance(p, dict) and p.get("epsilon") is not None]
    if not spent:
        return ""
    return f", ε ≤ {max(p['epsilon'] for p in spent):.4g} per party (δ = {spent[0]['delta']:g})"
