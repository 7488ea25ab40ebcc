"""`train`/`simulate --corpus` read the user's documents as told: --min-df, --max-df, --stopwords, --encoding; the
tokenizer travels with the model, so `infer` tokenises new documents the same way; bad values are one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedtopic.cli.main import main

TEXTS = [
    "the café serves the coffee and the cake",
    "the café opens early for the coffee crowd",
    "a match ended with the goal in the last minute",
    "the goal came late in the match at the stadium",
    "coffee and cake at the café after the match",
    "the stadium crowd saw the goal of the match",
] * 3


def _write(path: Path, texts: list[str], encoding: str = "utf-8") -> Path:
    path.write_bytes("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts).encode(encoding))
    return path


def _vocab(run: Path) -> list[str]:
    return json.loads((run / "vocab.json").read_text())["words"]


def test_stopwords_none_keeps_the_and_infer_tokenises_as_training_did(tmp_path, capsys):
    corpus = _write(tmp_path / "d.jsonl", TEXTS)
    common = ["train", "--corpus", str(corpus), "-k", "2", "--iterations", "5", "--max-df", "1.0"]
    assert main([*common, "--out", str(tmp_path / "plain")]) == 0
    assert main([*common, "--stopwords", "none", "--out", str(tmp_path / "all")]) == 0
    assert "the" not in _vocab(tmp_path / "plain") and "the" in _vocab(tmp_path / "all")
    capsys.readouterr()
    assert main(["infer", str(tmp_path / "all"), "--text", "the the the café", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["known_tokens"] == 4  # "the" counted three times, as in training
    assert main(["infer", str(tmp_path / "plain"), "--text", "the the the café", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["known_tokens"] == 1


def test_a_stopword_file_and_the_document_frequency_cut(tmp_path):
    corpus = _write(tmp_path / "d.jsonl", TEXTS)
    stop = tmp_path / "stop.txt"
    stop.write_text("# our own list\ncoffee\nCake\n")
    assert main(["simulate", "--algorithm", "csfed-lda", "--corpus", str(corpus), "--parties", "2", "-k", "2",
                 "--iterations", "2", "--stopwords", str(stop), "--min-df", "4", "--max-df", "0.9",
                 "--out", str(tmp_path / "run")]) == 0
    words = _vocab(tmp_path / "run")
    assert "coffee" not in words and "cake" not in words and "and" in words  # our list replaces the shipped one
    docs = [set(t.split()) for t in TEXTS]  # the cut is made on the whole corpus, before the held-out split
    df = {w: sum(w in d for d in docs) for w in set().union(*docs)}
    assert "the" not in words and df["the"] > 0.9 * len(docs)  # --max-df
    assert set(words) == {w for w, n in df.items() if 4 <= n <= 0.9 * len(docs) and len(w) >= 2} - {"coffee", "cake"}


def test_another_encoding_is_read_when_named_and_a_one_line_error_otherwise(tmp_path, capsys):
    corpus = _write(tmp_path / "latin.jsonl", TEXTS, encoding="latin-1")
    args = ["train", "--corpus", str(corpus), "-k", "2", "--iterations", "2", "--out", str(tmp_path / "r")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "not valid UTF-8" in err and "--encoding" in err and "Traceback" not in err
    assert main([*args, "--encoding", "latin-1", "--max-df", "1.0"]) == 0
    assert "café" in _vocab(tmp_path / "r")


@pytest.mark.parametrize("extra, says", [
    (["--dataset", "bbc-news", "--min-df", "3"], "read --corpus; a built-in dataset comes tokenised"),
    (["--encoding", "no-such-codec"], "unknown text encoding 'no-such-codec'"),
    (["--stopwords", "missing.txt"], "--stopwords takes english, none or a file"),
])
def test_bad_reading_options_are_one_line(tmp_path, capsys, extra, says):
    corpus = _write(tmp_path / "d.jsonl", TEXTS)
    source = [] if "--dataset" in extra else ["--corpus", str(corpus)]
    assert main(["train", *source, *extra, "-k", "2", "--iterations", "2", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
