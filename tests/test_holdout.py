"""Every document trained on when asked (issue 66 item 6): `--holdout 0` trains on all of them and labels its
figures as the training documents'; `--test-corpus` trains on every document of --corpus and scores another
file; the first line says how many are trained on and held out; bad combinations are one line."""

from __future__ import annotations

import json

import numpy as np
from _texts import theme_texts, write_jsonl

from fedtopic.cli.main import main


def _train(tmp_path, name: str, *extra: str) -> dict:
    assert main(["train", "--corpus", str(tmp_path / "d.jsonl"), "-k", "3", "--iterations", "10",
                 "--out", str(tmp_path / name), *extra]) == 0
    return json.loads((tmp_path / name / "summary.json").read_text())


def test_holdout_zero_and_a_test_corpus_train_on_every_document(tmp_path, capsys):
    write_jsonl(tmp_path / "d.jsonl", theme_texts(120, seed=6))
    write_jsonl(tmp_path / "t.jsonl", theme_texts(30, seed=7))
    default = _train(tmp_path, "default")
    first = capsys.readouterr().err.splitlines()[0]
    assert first == "training on 90 documents; 30 held out (25 %, seeded) for the held-out figures", first
    assert default["held_out"].startswith("held out (25 %")
    everything = _train(tmp_path, "all", "--holdout", "0")
    err = capsys.readouterr()
    assert err.err.splitlines()[0].startswith("training on all 120 documents")
    assert "on the training documents" in err.out and everything["held_out"] == "training documents"
    assert np.load(tmp_path / "all" / "theta.npy").shape[0] == 120  # θ for every document
    other = _train(tmp_path, "other", "--test-corpus", str(tmp_path / "t.jsonl"))
    assert capsys.readouterr().err.splitlines()[0] == (
        f"training on 120 documents; 30 documents of {tmp_path / 't.jsonl'} for the held-out figures")
    assert other["held_out"] == f"documents of {tmp_path / 't.jsonl'}" and np.isfinite(other["perplexity"])
    assert main(["simulate", "--algorithm", "csfed-lda", "--corpus", str(tmp_path / "d.jsonl"), "--parties", "2",
                 "-k", "3", "--iterations", "2", "--holdout", "0.5", "--out", str(tmp_path / "sim")]) == 0
    assert capsys.readouterr().err.splitlines()[0].startswith("training on 60 documents; 60 held out (50 %")


def test_bad_holdouts_are_one_line(tmp_path, capsys):
    write_jsonl(tmp_path / "d.jsonl", theme_texts(40, seed=6))
    for extra, says in ((["--holdout", "1.5"], "--holdout is a share of the documents in [0, 1)"),
                        (["--holdout", "0.1", "--test-corpus", str(tmp_path / "d.jsonl")], "not both"),
                        (["--dataset", "bbc-news", "--holdout", "0"], "a built-in dataset has its own test split")):
        args = ["train", *(["--corpus", str(tmp_path / "d.jsonl")] if "--dataset" not in extra else []), "-k", "2",
                "--iterations", "2", "--out", str(tmp_path / "x"), "--overwrite", *extra]
        assert main(args) == 2
        err = capsys.readouterr().err.strip()
        assert says in err and "\n" not in err, err
