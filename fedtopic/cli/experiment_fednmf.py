"""`fedtopic experiment fednmf-tables`: the FedNMF+MI paper's Tables III and IV, as summary.json and tables.md."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

from fedtopic.cli.output import OutputFormat, print_json, stderr_console, stdout_console
from fedtopic.errors import ConfigError
from fedtopic.runs.folder import prepare_run_dir, write_json

FEDNMF_EXPERIMENTS = {
    "fednmf-tables": "Tables III/IV: NMF beats LDA; MI raises coherence and F1, centralised and federated; "
                     "FedNMF+MI beats FedLDA (k ∈ {50, 100, 200} averaged, α = 1, K = 10, C = 0.2); Fig. 2 from the "
                     "same runs: accuracy rises with k, +MI above each rule",
    "fednmf-communication": "Fig. 3: F1 against communication rounds (k = 100, α = 1, K = 10): +MI converges faster",
    "fednmf-heterogeneity": "Fig. 4: FedAvg/FedAdam ± MI do better as α grows and worse as the number of clients K "
                            "grows",
}

NOTE = ("one setting for every method (the paper tuned E, B, η, λ per method); GloVe 50-d, the paper's 200-d is in "
        "no registry package")


def run_fednmf_experiment(name: str, *, dataset: str | None, out: Path, quick: bool, seed: int, overwrite: bool,
                          topics: tuple[int, ...] | None, iterations: int | None, fmt: OutputFormat,
                          engine: str = "threads", address: str | None = None) -> None:
    """Run one FedNMF experiment and write its folder."""
    from fedtopic.experiments import fednmf_paper as paper

    if name not in FEDNMF_EXPERIMENTS:
        raise ConfigError(f"unknown experiment {name!r}; the FedNMF ones are: {', '.join(FEDNMF_EXPERIMENTS)}")
    settings = paper.TableSettings.quick() if quick else paper.TableSettings()
    settings = replace(settings, seed=seed, **({"topics": topics} if topics else {}),
                       **({"rounds": iterations} if iterations else {}))
    dataset = dataset or "sms-spam"
    run_dir = prepare_run_dir(out, overwrite=overwrite)
    started = time.perf_counter()
    with stderr_console.status(name) as status:
        def say(msg: str) -> None:
            status.update(f"{name}: {msg}")

        if name == "fednmf-tables":
            result = paper.tables(dataset, settings, say, engine=engine, address=address)
        elif name == "fednmf-communication":
            k = topics[0] if topics else (20 if quick else 100)
            result = paper.communication(dataset, settings, k, every=1 if quick else 2, say=say)
        else:
            k = topics[0] if topics else (20 if quick else 100)
            alphas, clients = ((0.1, 1.0), (1, 10)) if quick else ((0.1, 0.5, 1.0, 5.0, 10.0), (1, 10, 30, 50))
            result = paper.heterogeneity(dataset, settings, k, alphas, clients, say)
    summary = {"experiment": name, "paper": FEDNMF_EXPERIMENTS[name], "settings": vars(settings), "note": NOTE,
               "engine": engine,
               "wall_seconds": time.perf_counter() - started, **result}
    _write(name, summary, result, run_dir, fmt)


def combine_fednmf_tables(name: str, folders: list[Path], *, out: Path, overwrite: bool, fmt: OutputFormat) -> None:
    """Write one Tables III/IV folder from fednmf-tables runs that split the k grid, without training."""
    from fedtopic.experiments import fednmf_paper as paper

    if name != "fednmf-tables":
        raise ConfigError("--combine is for fednmf-tables only")
    summaries = []
    for folder in folders:
        path = folder / "summary.json"
        try:
            summaries.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as e:
            raise ConfigError(f"--combine: cannot read {path}: {e}") from None
    try:
        settings, result = paper.combine_tables(summaries)
    except (KeyError, TypeError) as e:
        raise ConfigError(f"--combine: a summary.json is not a fednmf-tables result (missing {e})") from None
    except ValueError as e:
        raise ConfigError(f"--combine: {e}") from None
    run_dir = prepare_run_dir(out, overwrite=overwrite)
    summary = {"experiment": name, "paper": FEDNMF_EXPERIMENTS[name], "settings": settings, "note": NOTE,
               "combined_from": [str(f) for f in folders],
               "wall_seconds": sum(float(s.get("wall_seconds", 0.0)) for s in summaries), **result}
    _write(name, summary, result, run_dir, fmt)


def _write(name: str, summary: dict, result: dict, run_dir: Path, fmt: OutputFormat) -> None:
    dataset = result["dataset"]
    write_json(run_dir / "summary.json", summary)
    plots = _plots(name, result, run_dir)
    if name == "fednmf-tables":
        (run_dir / "tables.md").write_text(_markdown(result), encoding="utf-8")
    if fmt is OutputFormat.json:
        print_json(summary | {"plots": [str(p) for p in plots]})
        return
    if name == "fednmf-tables":
        stdout_console.print(_markdown(result), highlight=False, markup=False)
    stdout_console.print(f"{name} on {dataset}: {run_dir / 'summary.json'}; " + ", ".join(p.name for p in plots),
                         highlight=False)


def _plots(name: str, r: dict, out: Path) -> list[Path]:
    from fedtopic.eval.plots import plot_curves

    if name == "fednmf-tables":
        fed = [m for m in r["means"] if m.startswith("Fed") and m != "FedLDA"]
        series = {}
        for m in fed:
            points = sorted((row["topics"], row["accuracy"]) for row in r["rows"] if row["method"] == m)
            series[m] = ([k for k, _ in points], [a for _, a in points])
        return [plot_curves(out / "fig2_accuracy_vs_k.png", series, xlabel="topics k", ylabel="SVM accuracy",
                            title=f"Fig. 2: accuracy against k ({r['dataset']})")]
    if name == "fednmf-communication":
        series = {m: ([p["round"] for p in pts], [p["macro_f1"] for p in pts]) for m, pts in r["curves"].items()}
        return [plot_curves(out / "fig3_f1_vs_rounds.png", series, xlabel="communication rounds",
                            ylabel="macro-F1", title=f"Fig. 3: F1 against rounds ({r['dataset']}, k = {r['topics']})")]
    from fedtopic.experiments.fednmf_paper import figure4_series

    paths = []
    for key, label in (("alpha", "Dirichlet α"), ("clients", "clients K")):
        series = figure4_series(r, key)
        paths.append(plot_curves(out / f"fig4_f1_vs_{key}.png", series, xlabel=label, ylabel="macro-F1",
                                 title=f"Fig. 4: F1 against {label} ({r['dataset']}, k = {r['topics']})"))
    return paths


def _markdown(result: dict) -> str:
    lines = [f"| method ({result['dataset']}) | WE coherence | macro-F1 | accuracy | NPMI | paper WE / F1 / acc |",
             "|---|---|---|---|---|---|"]
    for name, m in result["means"].items():
        p = m.get("paper")
        ref = f"{p['we_coherence']:.3f} / {p['macro_f1']:.3f} / {p['accuracy']:.3f}" if p else "—"
        lines.append(f"| {name} | {m['we_coherence']:.3f} | {m['macro_f1']:.3f} | {m['accuracy']:.3f} | "
                     f"{m['npmi']:.3f} | {ref} |")
    return "\n".join(lines) + "\n"
