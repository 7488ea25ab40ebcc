"""The run folder of a neural-topic-model run (``train`` of prodlda, ``simulate`` of gfedntm-prodlda).

Scores: NPMI (reference = the training documents), topic diversity, the SVM's macro-F1 on θ (train θ → labels,
scored on the test documents' θ) and, on the synthetic dataset, TSS (Eq. 6) of Φ against the true topics and
DSS (Eq. 5) of the test documents' θ against their true θ. ProdLDA has no comparable likelihood, so no perplexity.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import Fitted, TrainSpec
from fedtopic.algorithms.model import TopicModel
from fedtopic.corpus.pool import merge_corpora
from fedtopic.corpus.training_data import TrainingData
from fedtopic.eval.classify import svm_macro_f1
from fedtopic.eval.coherence import npmi_coherence, top_word_ids
from fedtopic.eval.diversity import topic_diversity
from fedtopic.eval.ground_truth import dss, tss
from fedtopic.eval.topic_table import topic_table
from fedtopic.runs.folder import (
    TopicModelFile,
    save_theta,
    save_topic_model,
    write_summary,
    write_topics,
)


def ntm_scores(model: TopicModel, data: TrainingData, theta_train: np.ndarray, seed: int) -> dict[str, float]:
    """The scores above; ``theta_train`` in the order of the parties' documents."""
    train = merge_corpora(data.parties)
    theta_test = model.transform(data.test)
    top = min(10, model.phi.shape[1])
    scores: dict[str, float] = {
        "npmi": float(npmi_coherence(top_word_ids(model.phi, top), train, top).mean()),
        "topic_diversity": topic_diversity(model.phi, min(25, model.phi.shape[1])),
    }
    if train.labels is not None and data.test.labels is not None:
        tr, te = np.flatnonzero(train.labels >= 0), np.flatnonzero(data.test.labels >= 0)
        if len(te) and len(np.unique(train.labels[tr])) >= 2:
            scores["macro_f1"] = svm_macro_f1(theta_train[tr], train.labels[tr], theta_test[te],
                                              data.test.labels[te], seed=seed)
    if data.name == "synthetic":
        from fedtopic.corpus.synthetic import generate_synthetic

        truth = generate_synthetic()
        scores["tss"] = tss(truth.phi, model.phi)
        scores["tss_perfect"] = float(truth.phi.shape[0])
        scores["dss"] = dss(truth.theta_for(data.test.doc_names), theta_test)
    return scores


def write_ntm_run(out: Path, data: TrainingData, algorithm: str, spec: TrainSpec, fitted: Fitted, *,
                  wall_seconds: float, extra: Mapping[str, Any] | None = None) -> dict:
    """Evaluate ``fitted`` (θ rows = the training documents in party order) and write ``out``; the summary."""
    model = fitted.model
    scores = ntm_scores(model, data, fitted.theta, spec.seed)
    write_topics(out, topic_table(model.phi, data.train.vocab, data.train, theta=fitted.theta))
    save_topic_model(out, TopicModelFile(phi=model.phi, alpha=0.0, beta=0.0, vocab=data.train.vocab,
                                         tokenizer=data.tokenizer, algorithm=algorithm, network=model.network))
    if fitted.theta is not None:  # θ's rows: the parties' documents in party order
        pooled = merge_corpora(data.parties)
        save_theta(out, np.asarray(fitted.theta, dtype=np.float64), pooled.doc_names, data.test.doc_names,
                   documents=pooled)
    summary: dict[str, Any] = {
        "algorithm": algorithm, "dataset": data.name, "parties": len(data.parties), "topics": spec.topics,
        "iterations": spec.iterations, "seed": spec.seed, "perplexity": float("nan"), "wall_seconds": wall_seconds,
        "bytes_sent": 0, **scores, **dict(spec.options), "train_docs": data.train.n_docs,
        "test_docs": data.test.n_docs, "vocabulary": data.train.n_words,
    }
    summary |= dict(fitted.extra) | dict(extra or {})
    write_summary(out, summary)
    return summary

