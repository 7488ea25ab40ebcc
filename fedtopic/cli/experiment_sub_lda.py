"""`fedtopic experiment sub-lda-…`: the SUB-LDA paper's Figs. 1–4 and 6 and Table 3, each a summary.json and PNGs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fedtopic.cli.output import OutputFormat, print_json, stderr_console, stdout_console
from fedtopic.errors import ConfigError
from fedtopic.eval.plots import plot_curves, plot_model_comparison
from fedtopic.experiments import sub_lda_paper as paper
from fedtopic.runs.folder import prepare_run_dir, write_json

SUB_LDA_EXPERIMENTS = {
    "sub-lda-efficiency": "Fig. 1: the efficiency-privacy function I against γ (Eq. 6); Lemma 4.1's γ₀",
    "sub-lda-speedup": "Fig. 2: speed-up ratio (Eq. 7) against γ for K = 20…100",
    "sub-lda-perplexity": "Figs. 3 and 4: perplexity ratio (Eq. 8) against γ; perplexity per iteration at K = 100",
    "sub-lda-convergence": "Table 3: iterations to convergence (Eq. 9), ε_subsample, total ε (NIPS, K = 100)",
    "sub-lda-adaptive": "Fig. 6: adaptive subsampling (Eq. 10) at γ = 0.1, K = 20",
}
NO_DATA = ("the paper's NIPS and ENRON (UCI bag of words) ship in no package on the registries: "
           "reuters-r52 and bbc-news stand in for them")


def run_sub_lda_experiment(name: str, *, dataset: str | None, out: Path, quick: bool, seed: int, overwrite: bool,
                           topics: tuple[int, ...] | None, iterations: int | None, fmt: OutputFormat) -> None:
    """Run one SUB-LDA experiment and write its run folder."""
    from fedtopic.corpus.datasets import load_dataset

    if name not in SUB_LDA_EXPERIMENTS:
        raise ConfigError(f"unknown experiment {name!r}; the SUB-LDA ones are: {', '.join(SUB_LDA_EXPERIMENTS)}")
    base = paper.SubLDASettings.quick() if quick else paper.SubLDASettings()
    overrides: dict[str, Any] = {"seed": seed} | ({"iterations": iterations} if iterations else {})
    if topics:
        overrides |= {"topics": topics, "convergence_topics": max(topics), "adaptive_topics": min(topics)}
    settings = paper.SubLDASettings(**(vars(base) | overrides))
    dataset = None if name == "sub-lda-efficiency" else (dataset or ("bbc-news" if quick else "20newsgroups"))
    run_dir = prepare_run_dir(out, overwrite=overwrite)
    started = time.perf_counter()
    with stderr_console.status(name) as status:
        say = lambda msg: status.update(f"{name}: {msg}")  # noqa: E731
        if dataset is None:
            result = paper.efficiency(settings, say)
        else:
            data = load_dataset(dataset, progress=fmt is OutputFormat.text)
            result = {
                "sub-lda-speedup": lambda: paper.speedup(data.train, settings, say),
                "sub-lda-perplexity": lambda: paper.perplexity(data.train, data.test, settings, say),
                "sub-lda-convergence": lambda: paper.convergence(data.train, settings, say),
                "sub-lda-adaptive": lambda: paper.adaptive(data.train, data.test, settings, say),
            }[name]()
    summary = {"experiment": name, "dataset": dataset, "paper": SUB_LDA_EXPERIMENTS[name], "datasets_note": NO_DATA,
               "settings": vars(settings) | {"sigma": settings.sigma}, "wall_seconds": time.perf_counter() - started,
               **result}
    write_json(run_dir / "summary.json", summary)
    plots = _plots(name, result, settings, run_dir)
    if fmt is OutputFormat.json:
        print_json(summary | {"plots": [str(p) for p in plots]})
        return
    for line in _lines(name, result):
        stdout_console.print(line, highlight=False)
    stdout_console.print(f"written: {run_dir / 'summary.json'}, " + ", ".join(p.name for p in plots))


def _plots(name: str, r: dict, s: paper.SubLDASettings, out: Path) -> list[Path]:
    if name == "sub-lda-efficiency":
        paths = []
        for sigma in s.efficiency_sigmas:
            series = {k: v for k, v in r["curves"].items() if k.endswith(f"σ={sigma:g}")}
            paths.append(plot_curves(out / f"fig1_sigma{sigma:g}.png", series, xlabel="sampling rate γ",
                                     ylabel="I = γ·exp((α−1)·ε_sub(α))", title=f"Fig. 1: efficiency-privacy, σ = {sigma:g}",
                                     logy=True))
        return paths
    if name in ("sub-lda-speedup", "sub-lda-perplexity"):
        key, label = (("speedup_ratio", "speed-up ratio |t_sub − t_hdp| / t_hdp (Eq. 7)") if name == "sub-lda-speedup"
                      else ("perplexity_ratio", "perplexity ratio |per_sub − per_hdp| / per_hdp (Eq. 8)"))
        series: dict[str, tuple[list[float], list[float]]] = {}
        for row in r["rows"]:
            xs, ys = series.setdefault(f"K={row['topics']}", ([], []))
            xs.append(row["sampling_rate"])
            ys.append(row[key])
        fig = "fig2_speedup.png" if name == "sub-lda-speedup" else "fig3_perplexity_ratio.png"
        paths = [plot_curves(out / fig, series, xlabel="sampling rate γ", ylabel=label,
                             title=f"{'Fig. 2' if name == 'sub-lda-speedup' else 'Fig. 3'} against γ")]
        if name == "sub-lda-perplexity":
            curves = {n: ([i for i, _ in pts], [p for _, p in pts]) for n, pts in r["curves"].items()}
            paths.append(plot_curves(out / "fig4_convergence.png", curves, xlabel="iteration",
                                     ylabel=f"held-out perplexity (≤{s.eval_docs} docs)",
                                     title=f"Fig. 4: perplexity per iteration, K = {r['curves_topics']}"))
        return paths
    if name == "sub-lda-convergence":
        rates = [row["sampling_rate"] for row in r["rows"]]
        return [
            plot_curves(out / "table3_iterations.png", {"ours (Eq. 9)": (rates, [row["iterations"] for row in r["rows"]]),
                                                        "paper (NIPS)": (rates, [row["paper_iterations"] for row in r["rows"]])},
                        xlabel="sampling rate γ", ylabel="iterations to convergence", title="Table 3: iterations"),
            plot_curves(out / "table3_epsilon.png", {
                "total RDP at α=14 (ours)": (rates, [row["rdp_total"] for row in r["rows"]]),
                "total RDP at α=14 (paper)": (rates, [row["paper_rdp_total"] for row in r["rows"]]),
                "(ε, δ=1e-5) total (ours)": (rates, [row["epsilon"] for row in r["rows"]])},
                xlabel="sampling rate γ", ylabel="privacy loss", title="Table 3: privacy spent to convergence"),
        ]
    models = {("uniform" if row["eta"] is None else f"AS η={row['eta']:g}"): {"perplexity": row.get("perplexity")}
              for row in r["rows"] if "skipped" not in row}
    return [plot_model_comparison(out / "fig6_adaptive.png", models, [("perplexity", "held-out perplexity")],
                                  title=f"Fig. 6: adaptive subsampling, γ = {r['sampling_rate']:g}, K = {r['topics']}")]


def _lines(name: str, r: dict) -> list[str]:
    if name == "sub-lda-efficiency":
        return [f"I increasing in γ for every (α, σ): {r['increasing_everywhere']} (so Lemma 4.1's γ₀ = 1)"]
    if name == "sub-lda-convergence":
        out = ["γ     iters  ε_sub(14)  total RDP  (ε, δ)   | paper: iters  ε_sub  total"]
        for row in r["rows"]:
            out.append(f"{row['sampling_rate']:<5} {row['iterations']:>5}  {row['epsilon_subsample']:9.3f}  "
                       f"{row['rdp_total']:9.2f}  {row['epsilon']:7.2f}  | {row['paper_iterations']!s:>5}  "
                       f"{row['paper_epsilon_subsample']!s:>5}  {row['paper_rdp_total']!s:>6}")
        return out
    key = {"sub-lda-speedup": "speedup_ratio", "sub-lda-perplexity": "perplexity_ratio"}.get(name)
    if key:
        return [f"K={row['topics']:<4} γ={row['sampling_rate']:<4} {key} {row[key]:.3f}" for row in r["rows"]]
    return [f"{row['method']:<9} η={row['eta']!s:<5} perplexity {row.get('perplexity', float('nan')):.1f}"
            for row in r["rows"]]
