"""The LDA family's centralised run (`train`): held-out perplexity and log-likelihood curves while it fits, then
perplexity by fold-in, NPMI, diversity, SVM on θ, u_mass and c_v, and the run folder."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from fedtopic.algorithms.base import Fitted, TrainSpec
from fedtopic.algorithms.capabilities import SweepMetrics, TrainLog

if TYPE_CHECKING:
    from pathlib import Path

    from fedtopic.corpus.training_data import TrainingData

CURVE_TEST_DOCS = 500
"""The per-iteration perplexity curve folds in at most this many test documents (the final figure uses all)."""
CURVE_FOLD_IN = 20
"""Fold-in sweeps of a curve point (the final figure takes ``TrainLog.fold_in_iterations``, 50)."""


class LDATrainWriter:
    """``TrainWriter`` of the LDA family (a mixin of its centralised algorithms: ``name``, ``evaluation_alpha``)."""

    name: str
    evaluation_alpha: Any  # Algorithm.evaluation_alpha
    models_per_fit: Any  # Algorithm.models_per_fit

    def sweep_metrics(self, data: TrainingData, spec: TrainSpec, eval_every: int) -> SweepMetrics:
        """Every ``eval_every`` sweeps (and at the last): held-out perplexity on at most ``CURVE_TEST_DOCS`` test
        documents under the model's own α once it learns one, the ε spent by a DP model, log p(w, z)."""
        from fedtopic.eval.perplexity import completion_perplexity

        alpha = self.evaluation_alpha(spec)
        curve_test = data.test.sample_documents(CURVE_TEST_DOCS, spec.seed)

        def metrics(party: int, iteration: int, model: Any) -> dict[str, float]:
            if iteration % eval_every and iteration != spec.iterations:
                return {}
            out = {"perplexity": completion_perplexity(model.phi(), curve_test, getattr(model, "alpha", alpha),
                                                       iterations=CURVE_FOLD_IN, seed=spec.seed)}
            if hasattr(model, "privacy"):  # a DP algorithm: the ε spent so far
                out.update(model.privacy())
            if hasattr(model, "log_likelihood"):
                out["loglik"] = model.log_likelihood()
            return out

        return metrics

    def write_interrupted(self, out: Path, data: TrainingData, spec: TrainSpec, model: Any,
                          sweeps: int) -> str | None:
        """One pooled model: its Φ after ``sweeps`` sweeps as model.npz and vocab.json, its topics.json; what
        ``train --continue-from`` takes. Nothing for a model per party (one would be half trained)."""
        from fedtopic.corpus.pool import merge_corpora
        from fedtopic.eval.topic_table import topic_table
        from fedtopic.runs.folder import TopicModelFile, save_topic_model, write_topics

        if self.models_per_fit(len(data.parties)) != 1 or not callable(getattr(model, "phi", None)):
            return None
        phi = model.phi()
        save_topic_model(out, TopicModelFile(phi=phi, alpha=model.alpha, beta=model.beta, vocab=data.train.vocab,
                                             tokenizer=data.tokenizer, algorithm=self.name))
        write_topics(out, topic_table(phi, data.train.vocab, merge_corpora(data.parties)))
        return (f"the model after sweep {sweeps} of {spec.iterations} in {out} (model.npz, topics.json); continue "
                f"it with `fedtopic train ... -k {spec.topics} --continue-from {out}`")

    def write_train(self, out: Path, data: TrainingData, spec: TrainSpec, fitted: Sequence[Fitted],
                    log: TrainLog) -> dict[str, Any]:
        """One model of the pooled corpus (θ rows in party order), or one per party: each evaluated on the test
        split, the first's topics and Φ written (every party's in party_models.npz), θ, the curves' plots."""
        from fedtopic.corpus.pool import merge_corpora
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

        models, algorithm = list(fitted), self.name
        trains = [merge_corpora(data.parties)] if len(models) == 1 else list(data.parties)
        alpha, beta = models[0].model.alpha, models[0].model.beta
        log.stage(f"scoring: held-out perplexity (fold-in, {log.fold_in_iterations} iterations), NPMI, diversity")
        per_model = [
            evaluate_model(m.model.phi, m.model.alpha, train, data.test, theta_train=m.theta,
                           fold_in_iterations=log.fold_in_iterations, seed=spec.seed)
            for m, train in zip(models, trains)
        ]
        metrics = {k: float(np.mean([pm[k] for pm in per_model])) for k in per_model[0]}
        wall = time.perf_counter() - log.started
        phi = models[0].model.phi
        log.stage("writing the run folder: topics, model, θ, plots")
        write_topics(out, topic_table(phi, data.train.vocab, trains[0], theta=models[0].theta))
        save_topic_model(out, TopicModelFile(phi=phi, alpha=alpha, beta=beta, vocab=data.train.vocab,
                                             tokenizer=data.tokenizer, algorithm=algorithm))
        if len(models) > 1:
            np.savez_compressed(out / "party_models.npz", phi=np.stack([m.model.phi for m in models]))
        if all(m.theta is not None for m in models):  # θ of the training documents (each party's under its model)
            pooled = trains[0] if len(trains) == 1 else merge_corpora(data.parties)
            thetas = [np.asarray(m.theta, dtype=np.float64) for m in models]
            save_theta(out, thetas[0] if len(thetas) == 1 else np.vstack(thetas), pooled.doc_names,
                       data.test.doc_names, documents=pooled)
        curve, loglik = log.curves.get("perplexity", {}), log.curves.get("loglik", {})
        scored = min(CURVE_TEST_DOCS, data.test.n_docs)
        _plot(out, algorithm, curve, loglik, reported=(spec.iterations, metrics["perplexity"]),
              scoring=(scored, data.test.n_docs, log.fold_in_iterations))

        summary: dict[str, Any] = stable_summary(
            algorithm=algorithm, dataset=data.name, parties=len(data.parties), topics=spec.topics,
            iterations=spec.iterations, seed=spec.seed, metrics=metrics, wall_seconds=wall, bytes_sent=0) | {
            "train_seconds": log.train_seconds,
            "perplexity_eq16": metrics["perplexity_eq16"],
            **{k: v for k, v in spec.options.items()},  # the algorithm's options as given (alpha resolved below)
            "alpha": alpha,
            "beta": beta,
            "train_docs": data.train.n_docs,
            "train_tokens": data.train.n_tokens,
            "test_docs": data.test.n_docs,
            "vocabulary": data.train.n_words,
            "perplexity_curve": {str(p): c for p, c in curve.items()},
            # the curve is a cheaper estimate than the reported figure: its own documents and fold-in sweeps
            "perplexity_curve_scoring": {"test_documents": scored, "fold_in_iterations": CURVE_FOLD_IN},
        }
        if "macro_f1" in metrics:
            summary["macro_f1"] = metrics["macro_f1"]
        log.stage("scoring: u_mass and c_v")
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


def _plot(out: Path, algorithm: str, curve: dict[int, list[tuple[int, float]]],
          loglik: dict[int, list[tuple[int, float]]], *, reported: tuple[int, float],
          scoring: tuple[int, int, int]) -> None:
    """perplexity.png (the curve, and the reported figure as a star: each labelled with what it was scored on)
    and loglik.png. ``scoring``: (the curve's test documents, all test documents, the final fold-in sweeps)."""
    from fedtopic.eval.plots import plot_curves

    def series(data: dict[int, list[tuple[int, float]]]) -> dict[str, tuple[list[int], list[float]]]:
        name = (lambda p: "all parties pooled") if len(data) == 1 else (lambda p: f"party {p + 1}")
        return {name(p): ([i for i, _ in pts], [v for _, v in pts]) for p, pts in sorted(data.items())}

    curve_docs, all_docs, fold_in = scoring
    label = "reported" + (" (mean over the parties' models)" if len(curve) > 1 else "")
    plot_curves(
        out / "perplexity.png",
        series(curve),
        xlabel="iteration",
        ylabel="held-out perplexity (document completion)",
        title=f"{algorithm}: held-out perplexity per iteration\n(curve: {curve_docs:,} test documents, "
              f"{CURVE_FOLD_IN} fold-in sweeps; ★ {label}: all {all_docs:,}, {fold_in} sweeps)",
        points={f"{label}: {reported[1]:.1f}": reported},
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
