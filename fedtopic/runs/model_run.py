"""The run folder of an algorithm's model in one call: what a plugin's ``write_simulation`` / ``write_party`` writes.

A run folder is read by ``fedtopic topics``, ``infer``, ``dashboard``, ``report`` and ``fedtopic.load``; it holds
(docs/algorithms.md, "The run folder"):

- ``model.npz`` and ``vocab.json`` (``save_topic_model``): Φ float64[K, V], α, β, the algorithm's name, the words
  in id order and the tokenizer's options;
- ``topics.json`` (``eval.topic_table``): per topic its top words, their weights, its prevalence and NPMI;
- ``summary.json`` (``write_summary``): the stable keys ``SUMMARY_KEYS`` (null where one does not apply, never NaN)
  and the algorithm's own;
- optionally ``theta.npy`` and ``theta-rows.json`` (``save_theta``).

The runtimes add ``history/`` and run-info.json themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.eval.topic_table import topic_table
from fedtopic.runs.folder import (
    SUMMARY_KEYS,
    TopicModelFile,
    save_theta,
    save_topic_model,
    write_summary,
    write_topics,
)


def write_model_run(out: Path, *, phi: np.ndarray, vocab: Sequence[str], tokenizer: Mapping[str, Any],
                    algorithm: str, summary: Mapping[str, Any], alpha: float = 0.1, beta: float = 0.01,
                    reference: Corpus | None = None, theta: np.ndarray | None = None,
                    theta_names: tuple[str, ...] = (),
                    embedding: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
    """Write ``out`` for a model Φ (float64[K, V], rows need not be normalised) and return the summary written:
    ``summary`` with every stable key it lacks as null. ``reference``: documents whose NPMI (and, with ``theta``
    float64[D, K] of them, prevalence) topics.json reports; ``theta`` is also saved with ``theta_names`` (and,
    when its rows are ``reference``'s documents, their lengths and term frequencies: ``export pyldavis``)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    phi = np.asarray(phi, dtype=np.float64)
    if phi.ndim != 2 or phi.shape[1] != len(vocab):
        raise ValueError(f"Φ of shape {phi.shape} for a vocabulary of {len(vocab)} words")
    save_topic_model(out, TopicModelFile(phi=phi, alpha=float(alpha), beta=float(beta), vocab=tuple(vocab),
                                         tokenizer=dict(tokenizer), algorithm=algorithm, embedding=embedding))
    write_topics(out, topic_table(phi, vocab, reference, theta=theta))
    if theta is not None:
        save_theta(out, np.asarray(theta, dtype=np.float64), theta_names, documents=reference)
    full = {k: None for k in SUMMARY_KEYS} | {"algorithm": algorithm} | dict(summary)
    write_summary(out, full)
    return full
