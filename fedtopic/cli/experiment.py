"""`fedtopic experiment NAME`: the CSFed/DAFed paper's experiments (Figs. 6–8, Table 3)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from fedtopic.cli.output import (
    FormatOption,
    OutputFormat,
    print_json,
    stderr_console,
    stdout_console,
)
from fedtopic.corpus.datasets import load_dataset
from fedtopic.errors import ConfigError
from fedtopic.eval.plots import plot_curves, plot_grouped_bars
from fedtopic.experiments.inversion import inversion_summary, plot_fig9
from fedtopic.experiments.lda_paper import (
    EXPERIMENTS,
    GRIDS,
    ExperimentSettings,
    Point,
)
from fedtopic.experiments.timing import PAPER as TABLE4
from fedtopic.experiments.timing import TimingSettings, run_timing, table_lines
from fedtopic.runs.folder import prepare_run_dir, write_json

PAPER = {
    "parties": "Fig. 6: DAFed-LDA with 20 developers ≈ CSFed-LDA with 18; CSFed ≈ traditional LDA",
    "topics": "Fig. 7: perplexity falls with K, inflection at K = 40",
    "heterogeneity": "Table 3: CSFed 941.36 / 940.07 / 941.71, DAFed 959.37 / 961.32 / 960.03 for schemes a / b / c",
    "multistep": "Fig. 8: at 5 steps perplexity +3.5 % (CSFed) and +6.5 % (DAFed) over single-step",
    "inversion": "Fig. 9: at δ = 0.5 % the inverted model's perplexity +203 % under IPHE (η = 1.11) vs +1.17 % under UPHE (η = 0.01)",
}


ENGINE_EXPERIMENTS = (*GRIDS, "fednmf-tables", "gfedntm-synthetic")
"""The experiments whose trainings are independent, so that an engine can spread them (``--engine ray``)."""


def experiment(
    name: Annotated[str, typer.Argument(help=f"CSFed/DAFed paper: {', '.join(EXPERIMENTS)}, timing (Table 4); SUB-LDA paper: "
                                             "sub-lda-efficiency, sub-lda-speedup, sub-lda-perplexity, sub-lda-convergence, "
                                             "sub-lda-adaptive; iFTM paper: iftm-scarcity, iftm-privacy, "
                                             "iftm-communication, iftm-classification; FedNMF+MI paper: fednmf-tables, fednmf-communication, fednmf-heterogeneity; gFedNTM paper: gfedntm-synthetic, gfedntm-real")],
    dataset: Annotated[Optional[str], typer.Option(help="dataset (default 20newsgroups; bbc-news with --quick; timing always uses synthetic data at its own scale)")] = None,
    out: Annotated[Path, typer.Option(help="folder for summary.json and plots")] = Path("runs/experiment"),
    quick: Annotated[bool, typer.Option(help="a small grid (5 parties, 40 sweeps) for a smoke run")] = False,
    iterations: Annotated[Optional[int], typer.Option(min=1, help="override the sweeps per run")] = None,
    parties: Annotated[Optional[int], typer.Option(min=2, help="override the number of parties")] = None,
    topics: Annotated[Optional[str], typer.Option(help="override the topic counts, comma-separated (e.g. 20,40)")] = None,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    overwrite: Annotated[bool, typer.Option(help="replace an existing result in --out")] = False,
    debias: Annotated[bool, typer.Option(help="iftm-…: subtract the privatisation's noise floor from what models report (not in the paper)")] = False,
    model: Annotated[str, typer.Option(help="iftm-…: the topic model, lda or sentencelda (Algs. 1 and 2)")] = "lda",
    combine: Annotated[Optional[str], typer.Option(help="fednmf-tables: average earlier runs that split the k grid "
                                                      "(their --out folders, comma-separated) instead of training")] = None,
    max_vocabulary: Annotated[Optional[int], typer.Option(min=2, help="iftm-…, gfedntm-real: keep the N words of "
                                                          "highest document frequency (iFTM's privatisation costs "
                                                          "O(V) per token; gfedntm-real keeps 2,000 by default)")] = None,
    runs: Annotated[Optional[int], typer.Option(min=1, help="gfedntm-synthetic: draws per setting (the paper's 10)")] = None,
    docs: Annotated[Optional[int], typer.Option(min=10, help="gfedntm-synthetic: training documents per node (the "
                                                         "paper's 10,000; validation a tenth of it)")] = None,
    jobs: Annotated[int, typer.Option(min=1, help="gfedntm-synthetic: worker processes, one torch thread each (same "
                                                  "numbers for any count)")] = 1,
    engine: Annotated[str, typer.Option(help=f"{', '.join(ENGINE_EXPERIMENTS)}: threads (this machine) or ray "
                                             "(every training of the grid a Ray task; pip install "
                                             "'fedtopic[cluster]')")] = "threads",
    address: Annotated[Optional[str], typer.Option(help="--engine ray: the cluster to join (auto, or HEAD:6379)")] = None,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Reproduce one of the papers' experiments and write summary.json and PNG plots."""
    if name != "gfedntm-synthetic" and (runs is not None or docs is not None or jobs != 1):
        raise ConfigError("--runs, --docs and --jobs are for gfedntm-synthetic only")
    if name not in ENGINE_EXPERIMENTS and (engine != "threads" or address is not None):
        raise ConfigError(f"--engine and --address are for {', '.join(ENGINE_EXPERIMENTS)}")
    if engine != "threads":
        from fedtopic.engines import get_engine

        get_engine(engine)  # an unknown engine is one line before any work
        if jobs != 1:
            raise ConfigError(f"--jobs is this machine's processes; the {engine} engine spreads the trainings itself")
    if max_vocabulary is not None and not (name.startswith("iftm-") or name == "gfedntm-real"):
        raise ConfigError("--max-vocabulary is for the iftm-… experiments and gfedntm-real only")
    if name.startswith("iftm-"):
        from fedtopic.cli.experiment_iftm import run_iftm_experiment

        run_iftm_experiment(name, dataset=dataset, out=out, quick=quick, seed=seed, overwrite=overwrite,
                            topics=_topics(topics) if topics else None, iterations=iterations, fmt=fmt,
                            debias=debias, model=model, max_vocabulary=max_vocabulary)
        return
    if name.startswith("gfedntm-"):
        from fedtopic.cli.experiment_gfedntm import run_gfedntm_experiment

        run_gfedntm_experiment(name, out=out, quick=quick, seed=seed, overwrite=overwrite, iterations=iterations,
                               fmt=fmt, dataset=dataset, runs=runs, docs=docs, jobs=jobs,
                               max_vocabulary=max_vocabulary, engine=engine, address=address)
        return
    if name.startswith("fednmf-"):
        from fedtopic.cli.experiment_fednmf import run_fednmf_experiment

        if combine:
            from fedtopic.cli.experiment_fednmf import combine_fednmf_tables

            combine_fednmf_tables(name, [Path(d) for d in combine.split(",") if d], out=out, overwrite=overwrite,
                                  fmt=fmt)
            return
        run_fednmf_experiment(name, dataset=dataset, out=out, quick=quick, seed=seed, overwrite=overwrite,
                              topics=_topics(topics) if topics else None, iterations=iterations, fmt=fmt,
                              engine=engine, address=address)
        return
    if combine:
        raise ConfigError("--combine is for fednmf-tables only")
    if name.startswith("sub-lda-"):
        from fedtopic.cli.experiment_sub_lda import run_sub_lda_experiment

        ks = _topics(topics) if topics else None
        run_sub_lda_experiment(name, dataset=dataset, out=out, quick=quick, seed=seed, overwrite=overwrite,
                               topics=ks, iterations=iterations, fmt=fmt)
        return
    if name == "timing":
        _timing(out, quick, parties, seed, overwrite, fmt)
        return
    if name not in EXPERIMENTS:
        raise ConfigError(f"unknown experiment {name!r}; choose one of: {', '.join(EXPERIMENTS)}, timing, "
                          "sub-lda-efficiency, sub-lda-speedup, sub-lda-perplexity, sub-lda-convergence, sub-lda-adaptive, "
                          "iftm-scarcity, iftm-privacy, iftm-communication, iftm-classification, fednmf-tables, "
                          "fednmf-communication, fednmf-heterogeneity, gfedntm-synthetic, gfedntm-real")
    settings = ExperimentSettings.quick() if quick else ExperimentSettings()
    overrides = {"seed": seed} | ({"iterations": iterations} if iterations else {}) | ({"parties": parties} if parties else {})
    if topics:
        overrides["topics"] = _topics(topics)
    if parties:
        overrides["party_counts"] = tuple(sorted({n for n in settings.party_counts if n < parties} | {parties}))
    settings = ExperimentSettings(**(vars(settings) | overrides))
    dataset = dataset or ("bbc-news" if quick else "20newsgroups")
    run_dir = prepare_run_dir(out, overwrite=overwrite)
    data = load_dataset(dataset, progress=fmt is OutputFormat.text)
    started = time.perf_counter()
    with stderr_console.status(f"{name} on {dataset}") as status:
        def say(msg: str) -> None:
            status.update(f"{name} on {dataset}: {msg}")

        spread = {"engine": engine, "address": address} if name in GRIDS else {}
        points = EXPERIMENTS[name](data.train, data.test, settings, say, **spread)
    summary = {
        "experiment": name,
        "dataset": dataset,
        "engine": engine,
        "settings": vars(settings),
        "paper": PAPER[name],
        "wall_seconds": time.perf_counter() - started,
        "points": [p.as_dict() for p in points],
    } | (inversion_summary(points) if name == "inversion" else {})
    write_json(run_dir / "summary.json", summary)
    plots = _plot(name, points, run_dir)
    if fmt is OutputFormat.json:
        print_json(summary | {"plots": [str(p) for p in plots]})
        return
    table = Table("method", "K", "parties", "scheme", "steps", "perplexity", "Eq. 16", "seconds", title=f"{name} on {dataset}")
    for p in points:
        table.add_row(p.method, str(p.topics), str(p.parties), p.scheme, str(p.steps), f"{p.perplexity:.1f}", f"{p.perplexity_eq16:.1f}", f"{p.seconds:.1f}")
    if name == "inversion":
        table = Table("δ %", "scheme", "attacker", "hidden words", "perplexity", "+%", "η", "Eq. 16", "η Eq. 16", "ζ", title=f"{name} on {dataset}")
        for p in points:
            e = p.extra
            table.add_row(f"{e['delta_percent']:g}", p.method, p.scheme, str(e["hidden_words"]), f"{p.perplexity:.1f}", f"{e['increase_percent']:.1f}",
                          f"{e['eta']:.3f}", f"{p.perplexity_eq16:.1f}", f"{e['eta_eq16']:.3f}", f"{e['zeta_mean']:.4f}")
    stdout_console.print(table)
    stdout_console.print(f"paper: {PAPER[name]}")
    stdout_console.print(f"written: {run_dir / 'summary.json'}, " + ", ".join(p.name for p in plots))


def _topics(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(k) for k in text.split(","))
    except ValueError:
        raise ConfigError(f"--topics takes comma-separated integers, got {text!r}") from None
    if min(ks) < 2:
        raise ConfigError("--topics: every K must be at least 2")
    return ks


def _series(points: list[Point], x: str) -> dict[str, tuple[list[float], list[float]]]:
    out: dict[str, tuple[list[float], list[float]]] = {}
    for p in points:
        xs, ys = out.setdefault(p.method, ([], []))
        xs.append(getattr(p, x))
        ys.append(p.perplexity)
    return out


def _plot(name: str, points: list[Point], run_dir: Path) -> list[Path]:
    ylabel = "held-out perplexity (document completion)"
    if name == "parties":
        paths = []
        for k in sorted({p.topics for p in points}):
            at_k = [p for p in points if p.topics == k]
            series = _series([p for p in at_k if p.method != "standalone"], "parties")
            alone = next(p.perplexity for p in at_k if p.method == "standalone")
            counts = sorted({p.parties for p in at_k})
            series["standalone"] = (counts, [alone] * len(counts))
            paths.append(plot_curves(run_dir / f"parties_K{k}.png", series, xlabel="parties taking part", ylabel=ylabel, title=f"Fig. 6: perplexity vs parties (K={k})"))
        return paths
    if name == "topics":
        return [plot_curves(run_dir / "topics.png", _series(points, "topics"), xlabel="topics K", ylabel=ylabel, title="Fig. 7: perplexity vs K")]
    if name == "inversion":
        return plot_fig9(points, run_dir)
    if name == "multistep":
        return [plot_curves(run_dir / "multistep.png", _series(points, "steps"), xlabel="local sweeps per exchange (steps)", ylabel=ylabel, title="Fig. 8: multi-step training")]
    schemes = ["a", "b", "c"]
    series = {m: [next(p.perplexity for p in points if p.method == m and p.scheme == s) for s in schemes] for m in ("csfed", "dafed")}
    return [plot_grouped_bars(run_dir / "heterogeneity.png", ["(a) even", "(b) unbalanced", "(c) by label"], series, ylabel=ylabel, title="Table 3: data heterogeneity")]


def _timing(out: Path, quick: bool, parties: Optional[int], seed: int, overwrite: bool, fmt: OutputFormat) -> None:
    """Table 4: per-iteration time by phase for every method; summary.json, table.md and timing.png."""
    settings = TimingSettings.quick() if quick else TimingSettings()
    settings = TimingSettings(**(vars(settings) | {"seed": seed} | ({"parties": parties} if parties else {})))
    run_dir = prepare_run_dir(out, overwrite=overwrite)
    started = time.perf_counter()
    with stderr_console.status("timing") as status:
        rows = run_timing(settings, lambda msg: status.update(f"timing: {msg}"))
    summary = {"experiment": "timing", "dataset": "synthetic", "settings": vars(settings), "paper_seconds": TABLE4,
               "wall_seconds": time.perf_counter() - started, "rows": [r.as_dict() for r in rows]}
    write_json(run_dir / "summary.json", summary)
    (run_dir / "table.md").write_text("\n".join(table_lines(rows)) + "\n", encoding="utf-8")
    labels = [f"{r.method.removeprefix('CSFed ')} s={r.steps}" for r in rows]
    plot = plot_grouped_bars(run_dir / "timing.png", labels,
                             {"local Gibbs": [r.gibbs for r in rows], "encryption": [r.encryption for r in rows],
                              "communication": [r.communication for r in rows]},
                             ylabel="seconds per iteration per party", title="Table 4: time per iteration")
    if fmt is OutputFormat.json:
        print_json(summary | {"plots": [str(plot)]})
        return
    stdout_console.print("\n".join(table_lines(rows)))
    stdout_console.print(f"written: {run_dir / 'summary.json'}, {run_dir / 'table.md'}, {plot.name}")
