"""`fedtopic experiment iftm-… [--model lda|sentencelda]`: the iFTM paper's Figs. 5–7 and Table 3 for LDA or
SentenceLDA, each a summary.json and PNGs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from fedtopic.cli.output import OutputFormat, print_json, stderr_console, stdout_console
from fedtopic.errors import ConfigError
from fedtopic.eval.plots import plot_curves, plot_grouped_bars
from fedtopic.experiments import iftm_paper as paper
from fedtopic.runs.folder import prepare_run_dir, write_json

IFTM_EXPERIMENTS = {
    "iftm-scarcity": "Fig. 5: iFTM-11 (ε = 11, τ = 0.2) log-likelihood −2.74e7 against the best single party's −3.03e7",
    "iftm-privacy": "Fig. 6: log-likelihood rises with ε (−4.59e7 at ε = 8 to −2.74e7 at ε = 11, τ = 0.2)",
    "iftm-communication": "Fig. 7: iFTM converges within ~5 rounds (~15 with four parties); conventional LDA needs >300",
    "iftm-classification": "Table 3: precision 75.67 % on words alone; + θ (100 topics) from P1/P2/P3 alone 78.45/79.34/76.87 %, from iFTM 80.56 % (LDA; SentenceLDA 79.65/79.12/77.34/81.03 %)",
}
DATA_NOTE = "the paper's corpora are private: 20newsgroups / bbc-news stand in, split non-IID by label"
QUICK_DOCS, QUICK_WORDS = 400, 300  # --quick: a smoke run's corpus (paper.shrink)


def run_iftm_experiment(name: str, *, dataset: str | None, out: Path, quick: bool, seed: int, overwrite: bool,
                        topics: tuple[int, ...] | None, iterations: int | None, fmt: OutputFormat,
                        debias: bool = False, model: str = "lda", max_vocabulary: int | None = None) -> None:
    """Run one iFTM experiment and write its run folder (``max_vocabulary``: keep that many words, those of
    highest document frequency in the training corpus, a stated departure from the paper's full vocabulary)."""
    from fedtopic.corpus.datasets import load_dataset

    if name not in IFTM_EXPERIMENTS:
        raise ConfigError(f"unknown experiment {name!r}; the iFTM ones are: {', '.join(IFTM_EXPERIMENTS)}")
    if model not in ("lda", "sentencelda"):
        raise ConfigError(f"--model takes lda or sentencelda, got {model!r}")
    base = paper.IFTMSettings.quick() if quick else paper.IFTMSettings()
    overrides: dict[str, Any] = {"seed": seed, "debias": debias, "model": model} | ({"topics": topics[0]}
                                                                                   if topics else {})
    if iterations:
        overrides["local_iterations"] = max(1, iterations // base.rounds)
    settings = paper.IFTMSettings(**(vars(base) | overrides))
    dataset = dataset or ("bbc-news" if quick else "20newsgroups")
    run_dir = prepare_run_dir(out, overwrite=overwrite)
    data = load_dataset(dataset, progress=fmt is OutputFormat.text)
    train, test = data.train, data.test
    if quick:
        train, test = paper.shrink(train, test, docs=QUICK_DOCS, words=QUICK_WORDS, seed=seed)
    if max_vocabulary is not None and max_vocabulary < train.n_words:
        train, test = paper.cut_vocabulary(train, test, max_vocabulary)
    started = time.perf_counter()
    fn = {"iftm-scarcity": paper.scarcity, "iftm-privacy": paper.privacy, "iftm-communication": paper.communication,
          "iftm-classification": paper.classification}[name]
    with stderr_console.status(name) as status:
        result = fn(train, test, settings, lambda msg: status.update(f"{name}: {msg}"))
    summary = {"experiment": name, "algorithm": paper.algorithm_of(settings), "dataset": dataset,
               "corpus": {"train_documents": train.n_docs, "test_documents": test.n_docs, "vocabulary": train.n_words,
                          "max_vocabulary": max_vocabulary},
               "paper": IFTM_EXPERIMENTS[name], "datasets_note": DATA_NOTE,
               "settings": vars(settings), "wall_seconds": time.perf_counter() - started, **result}
    write_json(run_dir / "summary.json", summary)
    plots = _plots(name, result, run_dir, "SentenceLDA" if model == "sentencelda" else "LDA")
    if fmt is OutputFormat.json:
        print_json(summary | {"plots": [str(p) for p in plots]})
        return
    stdout_console.print(f"{name} on {dataset}: see {run_dir / 'summary.json'}; " + ", ".join(p.name for p in plots),
                         highlight=False)


def _plots(name: str, r: dict, out: Path, model: str) -> list[Path]:
    ylabel = "held-out log-likelihood per token (higher is better)"
    if name == "iftm-scarcity":
        groups = [*r["alone"], "iFTM"]
        values = [*r["alone"].values(), r["iftm"]]
        return [plot_grouped_bars(out / "fig5_scarcity.png", groups, {"log-likelihood": [-v for v in values]},
                                  ylabel="− " + ylabel.replace("higher", "lower"),
                                  title=f"Fig. 5 ({model}): each party alone vs iFTM")]
    if name == "iftm-privacy":
        series: dict[str, tuple[list[float], list[float]]] = {}
        for row in r["rows"]:
            xs, ys = series.setdefault(f"τ = {row['tau']:g}", ([], []))
            xs.append(row["epsilon"])
            ys.append(row["loglik"])
        return [plot_curves(out / "fig6_privacy.png", series, xlabel="ε", ylabel=ylabel, title=f"Fig. 6 ({model}): ε × τ")]
    if name == "iftm-communication":
        curves = {k: ([x for x, _ in v], [y for _, y in v]) for k, v in r["curves"].items()}
        return [plot_curves(out / "fig7_communication.png", curves, xlabel="communication rounds", ylabel=ylabel,
                            title=f"Fig. 7 ({model}): likelihood against communication", logx=True)]
    if "rows" not in r:
        return []
    groups = [row["features"] for row in r["rows"]]
    series2 = {"precision": [row["precision"] for row in r["rows"]], "macro-F1": [row["macro_f1"] for row in r["rows"]]}
    return [plot_grouped_bars(out / "table3_classification.png", groups, series2, ylabel="macro average",
                              title=f"Table 3 ({model}): one SVM on words, with θ from each party alone or from iFTM")]
