"""The iFTM paper's experiments on a tiny labelled corpus: each returns what its figure draws."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from _lda_synth import synthetic_lda

from fedtopic.corpus.types import Corpus
from fedtopic.experiments import iftm_paper as paper

SETTINGS = paper.IFTMSettings(topics=4, rounds=2, local_iterations=3, epsilon=11.0, epsilons=(8.0, 11.0),
                              taus=(0.2,), eval_docs=40)


@pytest.fixture(scope="module")
def data():
    corpus, _ = synthetic_lda(n_docs=240, doc_len=30, n_words=40, n_topics=4, seed=2, alpha=0.2, beta=0.05)
    labels = np.argmax(np.stack([np.bincount(corpus.words[corpus.doc_ptr[d]:corpus.doc_ptr[d + 1]] // 10,
                                             minlength=4) for d in range(corpus.n_docs)]), axis=1).astype(np.int32)
    corpus = Corpus(words=corpus.words, doc_ptr=corpus.doc_ptr, vocab=corpus.vocab, labels=labels,
                    label_names=tuple("abcd"))
    return corpus.subset(np.arange(200)), corpus.subset(np.arange(200, 240))


def test_ratio_label_split_sizes_and_skew(data):
    train, _ = data
    parts = paper.ratio_label_split(train, paper.RATIOS_3, seed=0)
    assert [p.n_docs for p in parts] == [33, 67, 100] and sum(p.n_docs for p in parts) == train.n_docs
    assert len(set(parts[0].labels.tolist())) < len(set(train.labels.tolist()))  # non-IID by label


def test_scarcity_privacy_communication_classification(data):
    train, test = data
    say = lambda _: None  # noqa: E731
    s = paper.scarcity(train, test, SETTINGS, say)
    assert set(s["alone"]) == {"p1", "p2", "p3"} and math.isfinite(s["iftm"])
    p = paper.privacy(train, test, SETTINGS, say)
    assert [(r["epsilon"], r["tau"]) for r in p["rows"]] == [(8.0, 0.2), (11.0, 0.2)]
    c = paper.communication(train, test, SETTINGS, say)
    assert set(c["curves"]) == {"iftm 3 parties, ε = 8", "iftm 3 parties, ε = 11", "iftm 4 parties, ε = 11",
                                "csfed-lda 3 parties"}
    assert [r for r, _ in c["curves"]["iftm 3 parties, ε = 8"]] == [1, 2]
    assert [r for r, _ in c["curves"]["csfed-lda 3 parties"]] == [1, 2, 3, 6, 12, 18]  # out to 3× iFTM's 6 sweeps
    t = paper.classification(train, test, SETTINGS, say)
    assert [r["features"] for r in t["rows"]] == ["words only", "+ θ p1 alone", "+ θ p2 alone", "+ θ p3 alone", "+ θ iFTM"]
    assert t["classifier_documents"] == {"train": 200, "test": 40}  # fixed: the whole tiny corpus, every label
    smallest_party = paper.ratio_label_split(train, paper.RATIOS_3, SETTINGS.seed)[0]
    assert t["labels"] == len(set(train.labels.tolist())) > len(set(smallest_party.labels.tolist()))
    assert all(0.0 <= r["precision"] <= 1.0 and 0.0 <= r["macro_f1"] <= 1.0 for r in t["rows"])
    assert t["rows"][0]["topics"] == 0 and t["rows"][-1]["topics"] >= 1


@pytest.mark.parametrize("model", ["lda", "sentencelda"])
@pytest.mark.parametrize("name", ["iftm-scarcity", "iftm-privacy", "iftm-communication", "iftm-classification"])
def test_quick_forms_write_their_summary_and_figure(tmp_path, capsys, name, model):
    """`fedtopic experiment NAME --quick --model M` on bbc-news (shrunk to 400 documents over 300 words)."""
    import json

    from fedtopic.cli.main import main

    out = tmp_path / "run"
    assert main(["experiment", name, "--quick", "--model", model, "--out", str(out), "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["algorithm"] == f"iftm-{model}" and s["corpus"]["vocabulary"] == 300
    assert s["plots"] and all(Path(p).is_file() for p in s["plots"])


def test_an_unknown_model_is_one_line(tmp_path, capsys):
    from fedtopic.cli.main import main

    assert main(["experiment", "iftm-scarcity", "--quick", "--model", "plsa", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert "lda or sentencelda" in err and "\n" not in err


def test_cut_vocabulary_keeps_the_most_widespread_training_words(data):
    train, test = data
    small, small_test = paper.cut_vocabulary(train, test, 10)
    df = np.array([len({d for d in range(train.n_docs) if w in set(train.words[train.doc_ptr[d]:train.doc_ptr[d + 1]])})
                   for w in range(train.n_words)])
    assert small.n_words == small_test.n_words == 10 and small.vocab == small_test.vocab
    assert min(df[train.vocab.index(w)] for w in small.vocab) >= np.sort(df)[-10]
    assert small.n_docs == train.n_docs and small.n_tokens < train.n_tokens


def test_max_vocabulary_cuts_the_quick_corpus_and_is_refused_elsewhere(tmp_path, capsys):
    import json

    from fedtopic.cli.main import main

    assert main(["experiment", "iftm-scarcity", "--quick", "--max-vocabulary", "120", "--out", str(tmp_path / "r"),
                 "--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["corpus"]["vocabulary"] == 120 and s["corpus"]["max_vocabulary"] == 120
    assert main(["experiment", "fednmf-tables", "--quick", "--max-vocabulary", "50", "--out", str(tmp_path / "x")]) == 2
    assert "--max-vocabulary is for the iftm-" in capsys.readouterr().err


def test_classification_skips_a_corpus_with_one_label(data):
    train, test = data
    one = Corpus(words=train.words, doc_ptr=train.doc_ptr, vocab=train.vocab,
                 labels=np.zeros(train.n_docs, dtype=np.int32), label_names=("a",))
    assert "single label" in paper.classification(one, test, SETTINGS, lambda _: None)["skipped"]
