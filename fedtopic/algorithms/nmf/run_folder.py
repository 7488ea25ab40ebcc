"""The run folder of an NMF-family run (``train`` of nmf / nmf-sgd, ``simulate`` of fednmf): model, topics,
and the paper's evaluation (WE coherence, NPMI, diversity, SVM F1 and accuracy on the topic weights)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import Fitted, TrainSpec
from fedtopic.corpus.pool import merge_corpora
from fedtopic.corpus.training_data import TrainingData
from fedtopic.eval.nmf_report import evaluate_nmf
from fedtopic.eval.topic_table import topic_table
from fedtopic.runs.folder import (
    TopicModelFile,
    save_theta,
    save_topic_model,
    write_summary,
    write_topics,
)


def write_nmf_run(out: Path, data: TrainingData, algorithm: str, spec: TrainSpec, fitted: Fitted, *,
                  wall_seconds: float, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Evaluate ``fitted`` (θ rows = the training documents in party order) and write ``out``; the summary."""
    train = merge_corpora(data.parties)
    model = fitted.model
    scores = evaluate_nmf(model.phi, fitted.theta, train, seed=spec.seed)
    write_topics(out, topic_table(model.phi, data.train.vocab, train, theta=fitted.theta))
    save_topic_model(out, TopicModelFile(phi=model.phi, alpha=0.0, beta=0.0, vocab=data.train.vocab,
                                         tokenizer=data.tokenizer, algorithm=algorithm, factors=model.factors))
    if fitted.theta is not None:
        save_theta(out, np.asarray(fitted.theta, dtype=np.float64), train.doc_names, data.test.doc_names,
                   documents=train)
    summary: dict[str, Any] = {
        "algorithm": algorithm, "dataset": data.name, "parties": len(data.parties), "topics": spec.topics,
        "iterations": spec.iterations, "seed": spec.seed, "perplexity": float("nan"),
        "npmi": scores["npmi"], "topic_diversity": scores["topic_diversity"], "wall_seconds": wall_seconds,
        "bytes_sent": 0, **scores, **dict(spec.options), "train_docs": train.n_docs,
        "vocabulary": data.train.n_words,
        "note": "NMF has no likelihood: no perplexity; the SVM uses an 80/20 split of the training documents' "
                "topic weights (paper §IV-D)",
    }
    summary |= dict(fitted.extra) | dict(extra or {})
    write_summary(out, summary)
    return summary

