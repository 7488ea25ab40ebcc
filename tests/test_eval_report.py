"""evaluate_model: the one evaluation every training command reports."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fedtopic.corpus.types import Corpus
from fedtopic.errors import EvalError
from fedtopic.eval.coherence import npmi_coherence, top_word_ids
from fedtopic.eval.diversity import topic_diversity
from fedtopic.eval.perplexity import completion_perplexity, eq16_perplexity
from fedtopic.eval.report import evaluate_model

K, V, L, ALPHA = 4, 120, 80, 0.1


def _labelled_lda(n_docs: int, phi: np.ndarray, seed: int) -> tuple[Corpus, np.ndarray]:
    """Documents whose label is their dominant true topic; returns the corpus and true θ."""
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.full(K, ALPHA), size=n_docs)
    doc = np.repeat(np.arange(n_docs), L)
    z = (np.cumsum(theta, axis=1)[doc] < rng.random(n_docs * L)[:, None]).sum(axis=1)
    words = np.minimum((np.cumsum(phi, axis=1)[z] < rng.random(n_docs * L)[:, None]).sum(axis=1), V - 1)
    corpus = Corpus(
        words.astype(np.int32),
        np.arange(0, n_docs * L + 1, L, dtype=np.int64),
        tuple(f"w{i}" for i in range(V)),
        labels=theta.argmax(axis=1).astype(np.int32),
        label_names=tuple(f"c{k}" for k in range(K)),
    )
    return corpus, theta


@pytest.fixture(scope="module")
def data():
    phi = np.random.default_rng(0).dirichlet(np.full(V, 0.05), size=K)
    train, theta_train = _labelled_lda(160, phi, 1)
    test, _ = _labelled_lda(60, phi, 2)
    return phi, train, test, theta_train


def test_reports_every_key_consistently_with_the_single_metrics(data):
    phi, train, test, _ = data
    scores = evaluate_model(phi, ALPHA, train, test, fold_in_iterations=20, seed=3)
    assert set(scores) == {"perplexity", "perplexity_eq16", "npmi", "topic_diversity", "macro_f1"}
    assert all(isinstance(v, float) for v in scores.values())
    assert scores["perplexity"] == completion_perplexity(phi, test, ALPHA, iterations=20, seed=3)
    assert scores["perplexity_eq16"] == eq16_perplexity(phi, test, ALPHA, iterations=20, seed=3)
    assert scores["npmi"] == pytest.approx(npmi_coherence(top_word_ids(phi, 10), train).mean())
    assert scores["topic_diversity"] == topic_diversity(phi)
    assert scores["macro_f1"] > 0.85  # labels are the dominant true topic


def test_true_model_scores_better_than_a_random_one(data):
    phi, train, test, theta_train = data
    random_phi = np.random.default_rng(9).dirichlet(np.full(V, 0.05), size=K)
    good = evaluate_model(phi, ALPHA, train, test, theta_train=theta_train, fold_in_iterations=20)
    bad = evaluate_model(random_phi, ALPHA, train, test, fold_in_iterations=20)
    assert good["perplexity"] < bad["perplexity"]
    assert good["npmi"] > bad["npmi"]
    assert good["macro_f1"] > bad["macro_f1"]


def test_no_macro_f1_without_labels_or_with_one_class(data):
    phi, train, test, _ = data
    unlabelled = dataclasses.replace(test, labels=None)
    assert "macro_f1" not in evaluate_model(phi, ALPHA, train, unlabelled, fold_in_iterations=5)
    one_class = dataclasses.replace(train, labels=np.zeros(train.n_docs, dtype=np.int32))
    assert "macro_f1" not in evaluate_model(phi, ALPHA, one_class, test, fold_in_iterations=5)
    all_unknown = dataclasses.replace(test, labels=np.full(test.n_docs, -1, dtype=np.int32))
    assert "macro_f1" not in evaluate_model(phi, ALPHA, train, all_unknown, fold_in_iterations=5)


def test_bad_inputs_raise_eval_error(data):
    phi, train, test, theta_train = data
    with pytest.raises(EvalError, match="theta_train has shape"):
        evaluate_model(phi, ALPHA, train, test, theta_train=theta_train[1:], fold_in_iterations=5)
    other_vocab = dataclasses.replace(test, vocab=test.vocab + ("extra",))
    with pytest.raises(EvalError, match="test corpus"):
        evaluate_model(phi, ALPHA, train, other_vocab, fold_in_iterations=5)
    with pytest.raises(EvalError, match="alpha"):
        evaluate_model(phi, 0.0, train, test)
