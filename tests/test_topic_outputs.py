"""The topic outputs users of gensim and tomotopy expect (issue 27 item 3): topics.json and `fedtopic topics`
carry each word's weight, each topic's prevalence and NPMI; θ's rows say which document each is; a model prints
as a short summary."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fedtopic.algorithms.model import TopicModel
from fedtopic.cli.main import main
from fedtopic.corpus.synthetic import generate_synthetic
from fedtopic.eval.coherence import npmi_coherence, top_word_ids
from fedtopic.eval.topic_table import prevalence_from_theta, topic_table
from fedtopic.runs.folder import save_theta


def test_topic_table_rows_against_their_definitions():
    rng = np.random.default_rng(0)
    corpus = generate_synthetic().parties[0]
    phi = rng.dirichlet(np.full(corpus.n_words, 0.1), size=4) * 3.0  # unnormalised on purpose
    theta = rng.dirichlet(np.ones(4), size=corpus.n_docs)
    table = topic_table(phi, corpus.vocab, corpus, theta=theta)
    norm = phi / phi.sum(axis=1, keepdims=True)
    ids = top_word_ids(norm, 10)
    npmi = npmi_coherence(ids, corpus, 10)
    lengths = np.diff(corpus.doc_ptr)
    share = (lengths @ theta) / lengths.sum()
    for k, row in enumerate(table):
        assert row["words"] == [corpus.vocab[i] for i in ids[k]]
        assert row["weights"] == pytest.approx(norm[k, ids[k]], abs=1e-6)
        assert row["npmi"] == pytest.approx(npmi[k], abs=1e-6)
        assert row["prevalence"] == pytest.approx(share[k], abs=1e-6)
    assert prevalence_from_theta(theta[:-1], corpus) is None  # rows that are not the corpus's documents
    assert all(r["prevalence"] is None and r["npmi"] is None for r in topic_table(phi, corpus.vocab, None))


def test_theta_rows_name_their_documents_and_the_held_out_ones(tmp_path):
    save_theta(tmp_path, np.zeros((3, 2)), ("a.txt", "b.txt", "c.txt"), ("d.txt",))
    rows = json.loads((tmp_path / "theta-rows.json").read_text())
    assert rows["rows"] == ["a.txt", "b.txt", "c.txt"] and rows["held_out"] == ["d.txt"]
    assert np.load(tmp_path / "theta.npy").shape == (3, 2)


def test_a_model_prints_as_a_short_summary():
    v = 5_000
    phi = np.random.default_rng(1).dirichlet(np.ones(v), size=50)
    model = TopicModel(phi=phi, alpha=0.1, beta=0.01, vocab=tuple(f"w{i}" for i in range(v)), algorithm="csfed-lda")
    text = repr(model)
    assert text.startswith("TopicModel(csfed-lda, K=50, V=5000") and "47 more" in text and len(text) < 400
    assert str(model) == text


def test_topics_command_shows_weights_share_and_npmi(tmp_path, capsys):
    from fedtopic.api import simulate

    run = simulate(dataset="synthetic", algorithm="csfed-lda", parties=2, topics=4, iterations=3, out=tmp_path / "r")
    capsys.readouterr()
    assert main(["topics", str(run.run_dir), "--words", "4", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 4 and all(len(r["weights"]) == 4 and r["npmi"] is not None for r in rows)
    assert sum(r["prevalence"] for r in rows) == pytest.approx(1.0, abs=1e-4)
    assert main(["topics", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "NPMI" in out and "share" in out
