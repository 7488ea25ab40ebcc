"""The run folder of ``fed-embedding-topics`` (train, simulate, node run): Φ = the topics' c-TF-IDF rows
normalised, θ = soft cluster membership; scores NPMI (reference: the training documents), topic diversity and the
SVM's macro-F1 on θ (train θ → labels, scored on the test documents' θ)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import TrainSpec
from fedtopic.algorithms.embedding_topics.clustering import soft_membership
from fedtopic.algorithms.embedding_topics.embeddings import embed
from fedtopic.algorithms.embedding_topics.inference import model_embedding
from fedtopic.algorithms.embedding_topics.options import settings_of
from fedtopic.algorithms.embedding_topics.twin import _phi
from fedtopic.corpus.pool import merge_corpora
from fedtopic.corpus.types import Corpus
from fedtopic.eval.classify import svm_macro_f1
from fedtopic.eval.coherence import npmi_coherence, top_word_ids
from fedtopic.eval.diversity import topic_diversity
from fedtopic.runs.model_run import write_model_run


def scores(phi: np.ndarray, train: Corpus, test: Corpus, theta_train: np.ndarray, centroids: np.ndarray,
           spec: TrainSpec) -> dict[str, float]:
    """NPMI, diversity and (with labels) macro-F1 of a model with topic ``centroids`` [K, d]."""
    s = settings_of(spec)
    top = min(10, phi.shape[1])
    out = {"npmi": float(npmi_coherence(top_word_ids(phi, top), train, top).mean()),
           "topic_diversity": topic_diversity(phi, min(25, phi.shape[1]))}
    if train.labels is not None and test.labels is not None and test.n_docs:
        theta_test = soft_membership(embed(test, s.embedding, s.seed), centroids, s.temperature)
        tr, te = np.flatnonzero(train.labels >= 0), np.flatnonzero(test.labels >= 0)
        if len(te) and len(np.unique(train.labels[tr])) >= 2:
            out["macro_f1"] = svm_macro_f1(theta_train[tr], train.labels[tr], theta_test[te], test.labels[te],
                                           seed=spec.seed)
    return out


def fewer_topics(found: int, asked: int, spec: TrainSpec) -> dict[str, list[str]]:
    """summary.json's ``warnings`` when fewer than the asked K topics hold documents (none otherwise)."""
    if found >= asked:
        return {}
    why = ("under dp.distributed a cluster's sum must rise above the noise: more documents, a larger dp.epsilon or "
           "fewer --opt clusters" if spec.options.get("dp.distributed") else
           "the other clusters ended without documents: fewer --opt clusters or more documents")
    return {"warnings": [f"only {found} of the {asked} topics asked hold documents ({why})"]}


def write_run(out: Path, name: str, data: Any, spec: TrainSpec, weights: np.ndarray, theta: np.ndarray,
              centroids: np.ndarray, extra: dict[str, Any]) -> dict[str, Any]:
    """A consortium's (or the pooled twin's) run folder; the summary."""
    train = merge_corpora(data.parties)
    phi = _phi(weights)
    s = settings_of(spec)
    return write_model_run(out, phi=phi, vocab=data.train.vocab, tokenizer=data.tokenizer, algorithm=name,
                           reference=train, theta=theta, theta_names=train.doc_names,
                           embedding=model_embedding(centroids, s.temperature, s.embedding, s.seed), summary={
                               "dataset": data.name, "parties": len(data.parties), "topics": int(phi.shape[0]),
                               "iterations": spec.iterations, "seed": spec.seed,
                               **scores(phi, train, data.test, theta, centroids, spec), **extra,
                               "embedding": settings_of(spec).embedding,
                               **fewer_topics(int(phi.shape[0]), spec.topics, spec)})


def write_party_run(out: Path, name: str, run: Any, totals: dict[str, Any]) -> dict[str, Any]:
    """One node's run folder: the consortium's model scored on the party's own documents."""
    party = run.party
    phi = _phi(party.topics.weights)
    theta = party.topics.theta(party.x, party.settings.temperature)
    s = party.settings
    return write_model_run(out, phi=phi, vocab=run.train.vocab, tokenizer=run.tokenizer, algorithm=name,
                           reference=run.train, theta=theta, theta_names=run.train.doc_names,
                           embedding=model_embedding(party.topics.centroids, s.temperature, s.embedding, s.seed),
                           summary={
                               "dataset": run.dataset, "parties": run.n_parties, "party": party.party_id,
                               "topics": int(phi.shape[0]), "iterations": run.spec.iterations,
                               "seed": run.spec.seed, "protection": run.protection,
                               **scores(phi, run.train, run.test, theta, party.topics.centroids, run.spec),
                               **totals, **fewer_topics(int(phi.shape[0]), run.spec.topics, run.spec)})
