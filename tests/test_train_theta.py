"""Every `train` run keeps θ of its training documents (issue 46 item 9): theta.npy with one row per training
document, theta-rows.json naming each row's document (and the held-out ones apart), for the LDA, NMF and neural
families, a model per party included."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _texts import theme_texts

from fedtopic.cli.main import main


@pytest.mark.parametrize("algorithm", ["centralized-lda", "local-lda", "nmf", "prodlda"])
def test_a_train_run_keeps_theta_of_its_training_documents(tmp_path, capsys, algorithm):
    if algorithm == "prodlda":
        pytest.importorskip("torch")
    texts = theme_texts(80, seed=9)
    corpus = tmp_path / "d.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"doc-{i}", "text": t}) + "\n" for i, t in enumerate(texts)))
    run = tmp_path / algorithm
    assert main(["train", "--algorithm", algorithm, "--corpus", str(corpus), "-k", "3", "--iterations", "5",
                 "--parties", "2", "--out", str(run), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    theta = np.load(run / "theta.npy")
    rows = json.loads((run / "theta-rows.json").read_text())
    assert theta.shape == (summary.get("train_docs") or theta.shape[0], 3) and len(rows["rows"]) == theta.shape[0]
    assert set(rows["rows"]).isdisjoint(rows["held_out"]) and len(rows["rows"]) + len(rows["held_out"]) == 80
    assert set(rows["rows"]) | set(rows["held_out"]) == {f"doc-{i}" for i in range(80)}
    assert np.all(theta >= 0)
    if algorithm != "nmf":  # NMF's H is a weight, not a distribution
        assert np.allclose(theta.sum(axis=1), 1.0)
