"""`fedtopic export pyldavis|gensim`: a train run's model opened by the tools themselves (issue 46 item 11):
pyLDAvis.prepare takes the exported arguments as they are, gensim's LdaModel.load has the run's topics and infers
new documents; a folder without θ is one line."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from _texts import theme_texts, write_jsonl

from fedtopic.cli.main import main


@pytest.fixture
def run(tmp_path, capsys):
    write_jsonl(tmp_path / "d.jsonl", theme_texts(120, seed=6))
    assert main(["train", "--corpus", str(tmp_path / "d.jsonl"), "-k", "3", "--iterations", "20",
                 "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    return tmp_path / "run"


def test_pyldavis_prepares_the_exported_arguments(run, tmp_path):
    pyldavis = pytest.importorskip("pyLDAvis", reason="NOT RUN: pyLDAvis is not installed (scripts/test installs it)")
    assert main(["export", "pyldavis", str(run), "--out", str(tmp_path / "vis.json")]) == 0
    data = json.loads((tmp_path / "vis.json").read_text())
    phi = np.load(run / "model.npz")["phi"]
    np.testing.assert_allclose(data["topic_term_dists"], phi / phi.sum(axis=1, keepdims=True))
    rows = json.loads((run / "theta-rows.json").read_text())
    assert data["doc_lengths"] == rows["lengths"] and len(data["doc_topic_dists"]) == len(rows["rows"])
    assert sum(data["term_frequency"]) == sum(data["doc_lengths"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vis = pyldavis.prepare(**data)
    assert len(vis.topic_coordinates) == 3


def test_gensim_loads_the_exported_model_with_the_runs_topics(run, tmp_path):
    pytest.importorskip("gensim", reason="NOT RUN: gensim is not installed (scripts/test installs it)")
    from gensim.corpora import Dictionary
    from gensim.models import LdaModel

    assert main(["export", "gensim", str(run), "--out", str(tmp_path / "g" / "lda")]) == 0
    lda = LdaModel.load(str(tmp_path / "g" / "lda"))
    dictionary = Dictionary.load(str(tmp_path / "g" / "lda.dictionary"))
    phi = np.load(run / "model.npz")["phi"]
    vocab = json.loads((run / "vocab.json").read_text())["words"]
    assert [dictionary[i] for i in range(len(vocab))] == vocab
    np.testing.assert_allclose(lda.get_topics(), phi / phi.sum(axis=1, keepdims=True), atol=1e-3)
    theta = dict(lda.get_document_topics(dictionary.doc2bow(vocab[:5]), minimum_probability=0.0))
    assert set(theta) == {0, 1, 2} and abs(sum(theta.values()) - 1.0) < 1e-5


def test_a_folder_without_theta_is_one_line(run, tmp_path, capsys):
    (run / "theta.npy").unlink()
    assert main(["export", "pyldavis", str(run), "--out", str(tmp_path / "vis.json")]) == 2
    err = capsys.readouterr().err
    assert "keeps no θ of its training documents" in err and "Traceback" not in err


def test_an_export_into_a_new_folder_makes_it_and_one_under_a_file_is_one_line(run, tmp_path, capsys):
    assert main(["export", "pyldavis", str(run), "--out", str(tmp_path / "new" / "deeper" / "vis.json")]) == 0
    assert json.loads((tmp_path / "new" / "deeper" / "vis.json").read_text())["topic_term_dists"]
    capsys.readouterr()
    assert main(["export", "pyldavis", str(run), "--out", str(run / "summary.json" / "vis.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err and "summary.json" in err, err
