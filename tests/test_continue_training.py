"""`train --continue-from RUN` continues a saved LDA model (issue 46 item 9): the sampler starts from assignments
drawn from its Φ, the corpus is read in its vocabulary, and more sweeps go on from where it was."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _texts import theme_texts, write_jsonl

from fedtopic.cli.main import main
from fedtopic.models.state import check_state, state_from_phi


def test_assignments_drawn_from_phi_follow_it_and_count_right():
    rng = np.random.default_rng(0)
    words = rng.integers(0, 6, 5000).astype(np.int32)
    doc_ptr = np.array([0, 1000, 2500, 5000])
    phi = np.zeros((3, 6))
    phi[np.arange(6) % 3, np.arange(6)] = 1.0  # word w belongs to topic w mod 3 alone
    state = state_from_phi(words, doc_ptr, phi, seed=1)
    assert np.array_equal(state.z, words % 3)
    check_state(state, words, doc_ptr, 6)
    mixed = np.full((3, 6), 1 / 6)
    mixed[0] *= 3  # topic 0 three times as likely for every word
    z = state_from_phi(words, doc_ptr, mixed / mixed.sum(axis=0), seed=2).z
    assert abs(np.mean(z == 0) - 0.6) < 0.03
    assert np.array_equal(z, state_from_phi(words, doc_ptr, mixed / mixed.sum(axis=0), seed=2).z)  # seeded


def _train(tmp_path, capsys, name: str, *extra: str) -> dict:
    assert main(["train", "--corpus", str(tmp_path / "d.jsonl"), "-k", "3", "--out", str(tmp_path / name),
                 "--format", "json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_continued_run_goes_on_from_the_saved_topics(tmp_path, capsys):
    write_jsonl(tmp_path / "d.jsonl", theme_texts(200, seed=4, length=20))
    first = _train(tmp_path, capsys, "first", "--iterations", "3")
    more = _train(tmp_path, capsys, "more", "--iterations", "3", "--continue-from", str(tmp_path / "first"))
    fresh = _train(tmp_path, capsys, "fresh", "--iterations", "3")
    assert more["continued_from"] == str(tmp_path / "first")
    assert more["perplexity"] < fresh["perplexity"] and more["perplexity"] <= first["perplexity"] * 1.01
    assert json.loads((tmp_path / "more" / "vocab.json").read_text())["words"] == \
        json.loads((tmp_path / "first" / "vocab.json").read_text())["words"]


@pytest.mark.parametrize("extra, says", [
    (["-k", "4"], "has K=3 topics; pass -k 3"),
    (["--algorithm", "nmf"], "which nmf has not"),
])
def test_what_cannot_be_continued_is_one_line(tmp_path, capsys, extra, says):
    write_jsonl(tmp_path / "d.jsonl", theme_texts(60, seed=4))
    _train(tmp_path, capsys, "first", "--iterations", "2")
    args = ["train", "--corpus", str(tmp_path / "d.jsonl"), "-k", "3", "--iterations", "2", "--continue-from",
            str(tmp_path / "first"), "--out", str(tmp_path / "x"), *extra]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
