"""`fedtopic train`: train an algorithm in its centralised mode and write a run folder."""

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
    progress_bar,
    stderr_console,
    stdout_console,
)
from fedtopic.runs.folder import add_to_summary


def train(
    algorithm: Annotated[str, typer.Option(help="a centralised algorithm (see `fedtopic algorithms`)")] = "centralized-lda",
    dataset: Annotated[Optional[str], typer.Option(help="built-in dataset (see `fedtopic data list`); default bbc-news")] = None,
    corpus: Annotated[Optional[Path], typer.Option(help="your own documents: a folder of .txt, a .jsonl, or a UCI docword file")] = None,
    topics: Annotated[int, typer.Option("--topics", "-k", min=2, help="number of topics K")] = 20,
    iterations: Annotated[int, typer.Option(min=1, help="training iterations (Gibbs sweeps)")] = 200,
    seed: Annotated[int, typer.Option(help="random seed; same seed, same result")] = 0,
    parties: Annotated[int, typer.Option(min=1, help="number of parties the training data is split among")] = 1,
    scheme: Annotated[str, typer.Option(help="partition: a even, b unbalanced, c by label, dirichlet")] = "a",
    dirichlet_alpha: Annotated[float, typer.Option(min=1e-6, help="scheme dirichlet: label proportions q ~ Dir(α·p) per party (as simulate's)")] = 0.5,
    max_vocabulary: Annotated[Optional[int], typer.Option(min=1, help="keep the N words of highest document frequency pooled over the parties, everywhere (gFedNTM's vocabulary consensus; contextualized-topic-models keeps 2,000)")] = None,
    min_df: MinDfOption = 2,
    max_df: MaxDfOption = 0.5,
    stopwords: StopwordsOption = "english",
    encoding: EncodingOption = "utf-8",
    holdout: HoldoutOption = None,
    test_corpus: TestCorpusOption = None,
    continue_from: Annotated[Optional[Path], typer.Option(help="centralized-lda: start from this run's topics (its Φ; the corpus is read in its vocabulary, K is its K) and run --iterations more sweeps")] = None,
    opt: OptOption = [],  # noqa: B006
    eval_every: Annotated[int, typer.Option(min=1, help="held-out perplexity every N iterations (curve)")] = 10,
    out: Annotated[Path, typer.Option(help="run folder to write")] = Path("runs/train"),
    overwrite: Annotated[bool, typer.Option(help="replace an existing run in --out")] = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Train centralized LDA (all data pooled) or local LDA (each party alone) and evaluate it."""
    from fedtopic.algorithms.base import Mode, metric
    from fedtopic.algorithms.registry import get_algorithm
    from fedtopic.cli.algo_options import resolve
    from fedtopic.corpus.training_data import load_training_data
    from fedtopic.runs.folder import prepare_run_dir
    from fedtopic.simulation.baseline_run import run_baseline

    _, spec = resolve(algorithm, Mode.centralised, "`fedtopic train`", topics, iterations, seed, opt)
    if dataset is None and corpus is None:
        dataset = "bbc-news"
    start = None if continue_from is None else _start_model(continue_from, algorithm, topics)
    run_dir = prepare_run_dir(out, overwrite=overwrite)
    data = load_training_data(dataset=dataset, corpus=corpus, n_parties=parties, scheme=scheme, seed=seed,
                              dirichlet_alpha=dirichlet_alpha, max_vocabulary=max_vocabulary,
                              reading=corpus_reading(min_df, max_df, stopwords, encoding), holdout=holdout,
                              test_corpus=test_corpus)
    if start is not None:  # the documents in the saved model's words, its tokenizer recorded again
        from fedtopic.corpus.training_data import in_vocabulary

        data = in_vocabulary(data, start.vocab, start.tokenizer)
    algo = get_algorithm(algorithm)
    algo.check_data(data.parties, spec)
    if fmt is not OutputFormat.json:
        stderr_console.print(data.describe(), highlight=False, soft_wrap=True)
    n_models = algo.models_per_fit(parties)
    with progress_bar() as bar:
        task = bar.add_task(algorithm, total=iterations * n_models, info="")

        def on_iteration(party: int, iteration: int, metrics: dict[str, float]) -> None:
            info = f"party {party + 1}/{n_models} " if n_models > 1 else ""
            if "perplexity" in metrics:
                info += f"held-out perplexity {metrics['perplexity']:.1f}"
            if "epsilon" in metrics:
                info += f", ε spent {metrics['epsilon']:.3g}"
            fields = {"info": info} if info else {}
            bar.update(task, completed=party * iterations + iteration, **fields)

        summary = run_baseline(data, algorithm, spec, run_dir, eval_every=eval_every, progress=on_iteration,
                               start_phi=None if start is None else start.phi,
                               stage=lambda what: bar.update(task, info=what))
        if start is not None:
            summary["continued_from"] = str(continue_from)
        summary["held_out"] = data.held_out  # what the held-out figures were scored on
        add_to_summary(run_dir, **{k: summary[k] for k in ("held_out", "continued_from") if k in summary})
        if summary.get("stopped_by") == "early-stopping":  # the bar ends where training did, not at the budget
            bar.update(task, total=summary["epochs"], completed=summary["epochs"],
                       info=f"stopped early (best epoch {summary['best_epoch']})")
        else:
            bar.update(task, info="done")
    print_warnings(summary, run_dir)
    if fmt is OutputFormat.json:
        print_json(summary | {"run": str(run_dir)})
        return
    stdout_console.print(
        f"[bold]{algorithm}[/] on {summary['dataset']} ({count_parties(summary['parties'])}, K={topics}, {iterations} iterations): "
        + (f"WE coherence {summary['we_coherence']:.3f}, " if "we_coherence" in summary
           else f"TSS {summary['tss']:.2f} of {summary['tss_perfect']:.0f}, DSS {summary['dss']:.4f}, " if "tss" in summary
           else "" if metric(summary, "perplexity", ".1f") == "n/a" else
           f"perplexity {summary['perplexity']:.1f}" + (" on the training documents" if data.test is data.train else "")
           + ", ")
        + f"NPMI {summary['npmi']:.3f}, diversity {summary['topic_diversity']:.2f}"
        + (f", macro-F1 {summary['macro_f1']:.3f}" if "macro_f1" in summary else "")
        + (f", accuracy {summary['accuracy']:.3f}" if "accuracy" in summary else "")
        + f" in {summary['wall_seconds']:.1f} s"
        + (f" (scored on {summary['held_out_documents_scored']:,} sampled held-out documents)"
           if "held_out_documents_scored" in summary else "")
        + (f"; stopped early at epoch {summary['epochs']} of {iterations}: no better validation loss since epoch "
           f"{summary['best_epoch']}, whose model is kept" if summary.get("stopped_by") == "early-stopping" else "")
    )
    if "privacy" in summary:
        p = summary["privacy"]
        stdout_console.print(
            f"privacy: ({p['epsilon']:.4g}, {p['delta']:g})-DP (Balle et al. 2020; classic {p['epsilon_classic']:.4g}); "
            f"RDP {p['rdp_at_order']:.4g} at order {p['order']} over {p['steps']} iterations "
            f"(γ = {p['sampling_rate']:g}, σ = {p['noise_multiplier']:.4g}; stopped by {summary['stopped_by']})")
    files = "summary.json, topics.json, model.npz" + ("" if metric(summary, "perplexity", ".1f") == "n/a"
                                                      else ", perplexity.png, loglik.png")
    stdout_console.print(f"run folder: {run_dir} ({files})")


def _start_model(run: Path, algorithm: str, topics: int):  # -> fedtopic.runs.folder.TopicModelFile
    """The saved model ``train --continue-from RUN`` starts from; one-line errors for what cannot continue."""
    from fedtopic.algorithms.capabilities import ContinuedFit, missing_members
    from fedtopic.algorithms.registry import get_algorithm
    from fedtopic.errors import ConfigError
    from fedtopic.runs.folder import load_topic_model

    if missing_members(get_algorithm(algorithm), ContinuedFit):
        raise ConfigError(f"--continue-from continues a fit that starts from saved topics (collapsed-Gibbs LDA: "
                          f"centralized-lda), which {algorithm} has not")
    model = load_topic_model(run)
    if model.phi.shape[0] != topics:
        raise ConfigError(f"{run} has K={model.phi.shape[0]} topics; pass -k {model.phi.shape[0]} to continue it")
    if model.factors is not None or model.network:
        raise ConfigError(f"{run} holds a {model.algorithm} model, whose Φ is no Gibbs sampler's to continue")
    return model
