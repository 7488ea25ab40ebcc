"""Run an algorithm in its centralised mode end to end: train, evaluate, write the run folder.

The driver owns the loop's side effects (progress, periodic held-out
perplexity, files); the numeric work stays in ``fedtopic.models`` and
``fedtopic.eval``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import Mode, TrainSpec
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.corpus.pool import merge_corpora
from fedtopic.corpus.training_data import TrainingData
from fedtopic.eval.perplexity import completion_perplexity
from fedtopic.eval.plots import plot_curves
from fedtopic.eval.report import evaluate_model
from fedtopic.eval.topic_table import topic_table
from fedtopic.runs.folder import (
    TopicModelFile,
    save_theta,
    save_topic_model,
    stable_summary,
    write_summary,
    write_topics,
)

ProgressFn = Callable[[int, int, dict[str, float]], None]
"""``progress(party, iteration, metrics)`` after every sweep; metrics may hold ``perplexity``."""
StageFn = Callable[[str], None]
"""``stage(what)`` when the run moves on to work after training (at K = 1,000 the held-out fold-in alone takes
longer than a few sweeps): what it is doing now, for a progress bar's text."""

CURVE_TEST_DOCS = 500
"""The per-iteration perplexity curve folds in at most this many test documents (the final figure uses all)."""


def run_baseline(
    data: TrainingData,
    algorithm: str,
    spec: TrainSpec,
    out: Path,
    *,
    eval_every: int,
    fold_in_iterations: int = 50,
    progress: ProgressFn | None = None,
    start_phi: np.ndarray | None = None,
    stage: StageFn | None = None,
) -> dict[str, Any]:
    """Train ``algorithm`` (any registered one with a centralised mode) on ``data``, evaluate on its test
    split, write ``out``; ``stage`` hears each step after training.

    Returns the summary dict that was written to ``out/summary.json``.
    """
    algo = get_algorithm(algorithm)
    algo.require(Mode.centralised, "`fedtopic train`")
    if algo.family != "lda":  # NMF and neural models: no comparable likelihood, their own evaluation
        return _run_other_family(data, algorithm, spec, out, progress)
    alpha = algo.evaluation_alpha(spec)
    curve_test = data.test.sample_documents(CURVE_TEST_DOCS, spec.seed)
    curve: dict[int, list[tuple[int, float]]] = {}
    loglik: dict[int, list[tuple[int, float]]] = {}

    def on_sweep(party: int, iteration: int, model: Any) -> None:  # the model in training: phi(), maybe log_likelihood()
        metrics: dict[str, float] = {}
        if iteration % eval_every == 0 or iteration == spec.iterations:
            ppl = completion_perplexity(model.phi(), curve_test, getattr(model, "alpha", alpha), iterations=20,
                                        seed=spec.seed)  # the model's own α once it learns one (optim_interval)
            curve.setdefault(party, []).append((iteration, ppl))
            metrics = {"perplexity": ppl}
            if hasattr(model, "privacy"):  # a DP algorithm: the ε spent so far
                metrics.update(model.privacy())
            if hasattr(model, "log_likelihood"):
                metrics["loglik"] = model.log_likelihood()
                loglik.setdefault(party, []).append((iteration, metrics["loglik"]))
        if progress is not None:
            progress(party, iteration, metrics)

    started = time.perf_counter()
    models = algo.fit(data.parties, spec, on_sweep) if start_phi is None else \
        algo.fit(data.parties, spec, on_sweep, start_phi=start_phi)  # continued from a saved model's topics
    # one model of the pooled corpus (θ rows in party order), or one per party
    trains = [merge_corpora(data.parties)] if len(models) == 1 else list(data.parties)
    train_seconds = time.perf_counter() - started

    tell = stage or (lambda what: None)
    alpha, beta = models[0].model.alpha, models[0].model.beta
    tell(f"scoring: held-out perplexity (fold-in, {fold_in_iterations} iterations), NPMI, diversity")
    per_model = [
        evaluate_model(m.model.phi, m.model.alpha, train, data.test, theta_train=m.theta,
                       fold_in_iterations=fold_in_iterations, seed=spec.seed)
        for m, train in zip(models, trains)
    ]
    metrics = {k: float(np.mean([pm[k] for pm in per_model])) for k in per_model[0]}
    wall = time.perf_counter() - started

    phi = models[0].model.phi
    tell("writing the run folder: topics, model, θ, plots")
    write_topics(out, topic_table(phi, data.train.vocab, trains[0], theta=models[0].theta))
    save_topic_model(out, TopicModelFile(phi=phi, alpha=alpha, beta=beta, vocab=data.train.vocab, tokenizer=data.tokenizer,
                                        algorithm=algorithm))
    if len(models) > 1:
        np.savez_compressed(out / "party_models.npz", phi=np.stack([m.model.phi for m in models]))
    if all(m.theta is not None for m in models):  # θ of the training documents (each party's under its model)
        pooled = trains[0] if len(trains) == 1 else merge_corpora(data.parties)
        thetas = [np.asarray(m.theta, dtype=np.float64) for m in models]
        save_theta(out, thetas[0] if len(thetas) == 1 else np.vstack(thetas), pooled.doc_names,
                   data.test.doc_names, documents=pooled)
    _plot(out, algorithm, curve, loglik)

    summary: dict[str, Any] = stable_summary(
        algorithm=algorithm, dataset=data.name, parties=len(data.parties), topics=spec.topics,
        iterations=spec.iterations, seed=spec.seed, metrics=metrics, wall_seconds=wall, bytes_sent=0) | {
        "train_seconds": train_seconds,
        "perplexity_eq16": metrics["perplexity_eq16"],
        **{k: v for k, v in spec.options.items()},  # the algorithm's options as given (alpha resolved below)
        "alpha": alpha,
        "beta": beta,
        "train_docs": data.train.n_docs,
        "train_tokens": data.train.n_tokens,
        "test_docs": data.test.n_docs,
        "vocabulary": data.train.n_words,
        "perplexity_curve": {str(p): c for p, c in curve.items()},
    }
    if "macro_f1" in metrics:
        summary["macro_f1"] = metrics["macro_f1"]
    tell("scoring: u_mass and c_v")
    summary |= gensim_coherences(phi, trains[0], seed=spec.seed)
    summary.update(models[0].extra)
    if len(per_model) > 1:
        summary["per_party"] = per_model
    write_summary(out, summary)
    return summary


def gensim_coherences(phi: np.ndarray, reference: Any, top: int = 10, seed: int = 0) -> dict[str, float]:
    """The mean u_mass and c_v of Φ's top words on ``reference`` (a Corpus), as gensim's CoherenceModel reports
    them (``eval.coherence_measures``); on a seeded sample of its documents past ``REFERENCE_TOKENS``."""
    from fedtopic.eval.coherence import top_word_ids
    from fedtopic.eval.coherence_measures import cv_coherence, umass_coherence
    from fedtopic.eval.report import REFERENCE_TOKENS, scoring_sample

    docs = scoring_sample(reference, REFERENCE_TOKENS, seed)
    reference = reference if docs is None else reference.subset(docs)

    words = top_word_ids(phi, min(top, phi.shape[1]))
    return {"u_mass": float(umass_coherence(words, reference).mean()),
            "c_v": float(cv_coherence(words, reference).mean())}


def _run_other_family(data: TrainingData, algorithm: str, spec: TrainSpec, out: Path,
                      progress: ProgressFn | None) -> dict[str, Any]:
    """``train`` for the NMF and neural families: fit on the pooled parties, then the family's run writer."""
    from fedtopic.algorithms.nmf.run_folder import write_nmf_run
    from fedtopic.algorithms.ntm.run_folder import write_ntm_run

    algo = get_algorithm(algorithm)
    write = {"nmf": write_nmf_run, "ntm": write_ntm_run}[algo.family]
    started = time.perf_counter()

    def on_epoch(party: int, iteration: int, _model: Any) -> None:
        if progress is not None:
            progress(party, iteration, {})

    (fitted,) = algo.fit(data.parties, spec, on_epoch)
    wall = time.perf_counter() - started
    return write(out, data, algorithm, spec, fitted, wall_seconds=wall, extra={"train_seconds": wall})


def _plot(out: Path, algorithm: str, curve: dict[int, list[tuple[int, float]]], loglik: dict[int, list[tuple[int, float]]]) -> None:
    def series(data: dict[int, list[tuple[int, float]]]) -> dict[str, tuple[list[int], list[float]]]:
        name = (lambda p: "all parties pooled") if len(data) == 1 else (lambda p: f"party {p + 1}")
        return {name(p): ([i for i, _ in pts], [v for _, v in pts]) for p, pts in sorted(data.items())}

    plot_curves(
        out / "perplexity.png",
        series(curve),
        xlabel="iteration",
        ylabel=f"held-out perplexity (document completion, ≤{CURVE_TEST_DOCS} docs)",
        title=f"{algorithm}: held-out perplexity per iteration",
    )
    if not loglik:
        return
    plot_curves(
        out / "loglik.png",
        series(loglik),
        xlabel="Gibbs iteration",
        ylabel="log p(w, z) per token",
        title=f"{algorithm}: training log-likelihood",
    )
