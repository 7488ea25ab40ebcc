"""Corpora too large to score whole are scored on a seeded sample of their documents, and the summaries and the
CLI say so; corpora within the budgets (every built-in dataset) are scored whole, as before."""

from __future__ import annotations

import json

import numpy as np

from fedtopic.cli.main import main
from fedtopic.corpus.datasets import load_dataset
from fedtopic.eval import report
from fedtopic.eval.report import evaluate_model, scoring_sample


def test_the_sample_is_seeded_whole_documents_near_the_budget():
    corpus = load_dataset("bbc-news", progress=False).train
    assert scoring_sample(corpus, corpus.n_tokens, seed=1) is None
    docs = scoring_sample(corpus, corpus.n_tokens // 4, seed=1)
    assert np.array_equal(docs, scoring_sample(corpus, corpus.n_tokens // 4, seed=1))
    assert not np.array_equal(docs, scoring_sample(corpus, corpus.n_tokens // 4, seed=2))
    assert np.all(np.diff(docs) > 0) and abs(corpus.subset(docs).n_tokens / (corpus.n_tokens / 4) - 1) < 0.15


def test_evaluation_past_the_budgets_scores_a_sample_and_says_so(monkeypatch):
    data = load_dataset("bbc-news", progress=False)
    rng = np.random.default_rng(0)
    phi = rng.dirichlet(np.ones(data.train.n_words), 5)
    whole = evaluate_model(phi, 0.1, data.train, data.test, fold_in_iterations=5, seed=3)
    assert "held_out_documents_scored" not in whole and "reference_documents" not in whole
    monkeypatch.setattr(report, "HELD_OUT_TOKENS", data.test.n_tokens // 3)
    monkeypatch.setattr(report, "REFERENCE_TOKENS", data.train.n_tokens // 3)
    theta = rng.dirichlet(np.ones(5), data.train.n_docs)
    part = evaluate_model(phi, 0.1, data.train, data.test, theta_train=theta, fold_in_iterations=5, seed=3)
    test_docs = scoring_sample(data.test, data.test.n_tokens // 3, 3)
    assert part["held_out_documents_scored"] == len(test_docs) < data.test.n_docs
    assert part["reference_documents"] == len(scoring_sample(data.train, data.train.n_tokens // 3, 3))
    alone = evaluate_model(phi, 0.1, data.train, data.test.subset(test_docs), fold_in_iterations=5, seed=3)
    assert part["perplexity"] == alone["perplexity"]


def test_train_tells_when_it_scored_a_sample(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(report, "HELD_OUT_TOKENS", 20_000)
    assert main(["train", "-k", "3", "--iterations", "2", "--out", str(tmp_path / "r")]) == 0
    line = capsys.readouterr().out
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert f"scored on {summary['held_out_documents_scored']:,} sampled held-out documents" in line
    assert "reference_documents" not in summary
