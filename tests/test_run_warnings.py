"""A run whose model learnt nothing says so in one warning line (issue 66 item 5: "warn when a model ends where
it started"), and a run that learnt something says nothing."""

from __future__ import annotations

import numpy as np
from _texts import theme_texts, write_jsonl

from fedtopic.cli.main import main
from fedtopic.runs.sanity import model_warnings


def test_identical_topics_are_a_warning_and_distinct_ones_are_not(tmp_path):
    np.savez(tmp_path / "model.npz", phi=np.full((3, 5), 0.2))
    (line,) = model_warnings(tmp_path)
    assert "all 3 topics are the same distribution" in line
    np.savez(tmp_path / "model.npz", phi=np.eye(3, 5) + 0.01)
    assert model_warnings(tmp_path) == []
    assert model_warnings(tmp_path / "nowhere") == []


def test_a_corpus_of_one_word_is_refused_in_one_line_and_a_run_that_learnt_says_nothing(tmp_path, capsys):
    write_jsonl(tmp_path / "one.jsonl", ["alpha alpha alpha"] * 20)
    assert main(["train", "--corpus", str(tmp_path / "one.jsonl"), "--min-df", "1", "--max-df", "1.0", "-k", "3",
                 "--iterations", "5", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip()
    assert "keeps 1 distinct word" in err and "\n" not in err, err
    write_jsonl(tmp_path / "themes.jsonl", theme_texts(60, seed=2))
    assert main(["train", "--corpus", str(tmp_path / "themes.jsonl"), "-k", "3", "--iterations", "20",
                 "--out", str(tmp_path / "ok")]) == 0
    assert "warning:" not in capsys.readouterr().err
