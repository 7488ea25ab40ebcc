"""`fedtopic experiment gfedntm-synthetic|gfedntm-real`: the gFedNTM paper's Fig. 3 (settings A and B) and Fig. 4
(AMWMD on real documents), summary.json + PNGs."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from fedtopic.cli.output import OutputFormat, print_json, stderr_console, stdout_console
from fedtopic.errors import ConfigError
from fedtopic.runs.folder import prepare_run_dir, write_json

GFEDNTM_EXPERIMENTS = {
    "gfedntm-synthetic": "Fig. 3: collaborative ProdLDA ahead of each node alone in TSS and DSS, most where few topics "
                         "are shared (setting A) and for small η (setting B)",
    "gfedntm-real": "Fig. 4: the 10-topic federated CombinedTM is nearer (AMWMD) to every node's own topics than any "
                    "other node's model, the 25-topic one nearer still",
}


def run_gfedntm_experiment(name: str, *, out: Path, quick: bool, seed: int, overwrite: bool,
                           iterations: int | None, fmt: OutputFormat, dataset: str | None = None,
                           runs: int | None = None, docs: int | None = None, jobs: int = 1,
                           max_vocabulary: int | None = None, engine: str = "threads",
                           address: str | None = None) -> None:
    """Run one gFedNTM experiment and write its folder (``runs``, ``docs``, ``jobs``: gfedntm-synthetic's scale;
    ``max_vocabulary``: gfedntm-real's consensus vocabulary)."""
    from fedtopic.eval.plots import plot_curves
    from fedtopic.experiments import gfedntm_paper as paper

    if name not in GFEDNTM_EXPERIMENTS:
        raise ConfigError(f"unknown experiment {name!r}; the gFedNTM ones are: {', '.join(GFEDNTM_EXPERIMENTS)}")
    if name == "gfedntm-real":
        _run_real(name, out=out, quick=quick, seed=seed, overwrite=overwrite, iterations=iterations, fmt=fmt,
                  dataset=dataset, vocabulary=max_vocabulary)
        return
    settings = paper.SyntheticSettings.quick() if quick else paper.SyntheticSettings()
    scale = ({"epochs": iterations} if iterations else {}) | ({"runs": runs} if runs else {}) | (
        {"train_docs": docs, "validation_docs": max(1, docs // 10)} if docs else {})
    settings = replace(settings, seed=seed, **scale)
    run_dir = prepare_run_dir(out, overwrite=overwrite)
    started = time.perf_counter()
    with stderr_console.status(name) as status:
        result = paper.settings_ab(settings, lambda msg: status.update(f"{name}: {msg}"), jobs=jobs, engine=engine,
                                   address=address)
    summary = {"experiment": name, "paper": GFEDNTM_EXPERIMENTS[name], "settings": vars(settings),
               "engine": engine, "wall_seconds": time.perf_counter() - started, **result}
    write_json(run_dir / "summary.json", summary)
    plots = []
    for setting, key, label in (("A", "shared", "shared topics K′"), ("B", "eta", "topic prior η")):
        rows = result[setting]
        xs = [r[key] for r in rows]
        for metric in ("tss", "dss"):
            series = {who: (xs, [r[f"{metric}_{who}"] for r in rows]) for who in ("alone", "collaborative")}
            if metric == "tss":
                series["baseline"] = (xs, [r["tss_baseline"] for r in rows])
            plots.append(plot_curves(run_dir / f"fig3_{setting}_{metric}.png", series, xlabel=label,
                                     ylabel=metric.upper(), title=f"setting {setting}: {metric.upper()}"))
    if fmt is OutputFormat.json:
        print_json(summary | {"plots": [str(p) for p in plots]})
        return
    stdout_console.print(f"{name}: {run_dir / 'summary.json'}; " + ", ".join(p.name for p in plots), highlight=False)


def _run_real(name: str, *, out: Path, quick: bool, seed: int, overwrite: bool, iterations: int | None,
              fmt: OutputFormat, dataset: str | None, vocabulary: int | None) -> None:
    from fedtopic.corpus.datasets import load_dataset
    from fedtopic.eval.plots import plot_grouped_bars
    from fedtopic.experiments import gfedntm_paper as paper

    settings = paper.RealSettings.quick() if quick else paper.RealSettings()
    settings = replace(settings, seed=seed, **({"epochs": iterations} if iterations else {}),
                       **({"dataset": dataset} if dataset else {}),
                       **({"vocabulary": vocabulary} if vocabulary else {}))
    run_dir = prepare_run_dir(out, overwrite=overwrite)
    data = load_dataset(settings.dataset, progress=fmt is OutputFormat.text)
    started = time.perf_counter()
    with stderr_console.status(name) as status:
        result = paper.real_amwmd(data.train, settings, lambda msg: status.update(f"{name}: {msg}"))
    summary = {"experiment": name, "paper": GFEDNTM_EXPERIMENTS[name], "settings": vars(settings),
               "datasets_note": "the paper's Semantic Scholar subsets are not in any registry package: a "
                                "labelled text dataset's categories, dealt whole to the nodes, stand in for its "
                                "five disciplines",
               "wall_seconds": time.perf_counter() - started, **result}
    write_json(run_dir / "summary.json", summary)
    nodes, models = list(result["amwmd"]), list(next(iter(result["amwmd"].values())))
    series = {m: [result["amwmd"][n][m] for n in nodes] for m in models}
    plots = [plot_grouped_bars(run_dir / "fig4_amwmd.png", nodes, series, ylabel="AMWMD to the node's own topics "
                               "(lower is nearer)", title="Fig. 4: AMWMD between each node's topics and every model")]
    if fmt is OutputFormat.json:
        print_json(summary | {"plots": [str(p) for p in plots]})
        return
    stdout_console.print(f"{name}: {run_dir / 'summary.json'}; " + ", ".join(p.name for p in plots), highlight=False)
