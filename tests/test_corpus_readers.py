"""read_corpus on each format, and its one-line errors."""

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from fedtopic.corpus.readers import read_corpus
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.errors import CorpusError

KEEP_ALL = {"min_df": 1, "max_df": 1.0}


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def _words(corpus, d):
    return [corpus.vocab[w] for w in corpus.words[corpus.doc_ptr[d]:corpus.doc_ptr[d + 1]]]


def test_text_folder_with_label_subfolders(tmp_path):
    _write(tmp_path / "sport" / "a.txt", "Goal! The striker scored a goal.")
    _write(tmp_path / "sport" / "deep" / "b.txt", "Match report: goal")
    _write(tmp_path / "tech" / "c.txt", "New chips, faster chips")
    _write(tmp_path / "loose.txt", "goal chips")
    _write(tmp_path / "notes.md", "ignored goal")
    c = read_corpus(tmp_path, **KEEP_ALL)
    assert c.doc_names == ("loose.txt", "sport/a.txt", "sport/deep/b.txt", "tech/c.txt")
    assert c.label_names == ("sport", "tech")
    assert c.labels.tolist() == [-1, 0, 0, 1]
    assert _words(c, 1) == ["goal", "striker", "scored", "goal"]


def test_text_folder_without_subfolders_is_unlabelled(tmp_path):
    _write(tmp_path / "1.txt", "alpha beta")
    _write(tmp_path / "2.txt", "beta gamma")
    c = read_corpus(str(tmp_path), min_df=2, max_df=1.0)
    assert c.labels is None and c.vocab == ("beta",) and c.n_docs == 2


def test_text_folder_errors(tmp_path):
    with pytest.raises(CorpusError, match="no such file or folder"):
        read_corpus(tmp_path / "absent")
    with pytest.raises(CorpusError, match="no .txt files in folder"):
        read_corpus(tmp_path)
    _write(tmp_path / "a.txt", "the and of\n42")
    with pytest.raises(CorpusError, match=r"corpus is empty after tokenising") as err:
        read_corpus(tmp_path)
    assert str(tmp_path) in str(err.value)
    _write(tmp_path / "b.txt", b"fine text\nmore\nbad \xff byte\n")
    with pytest.raises(CorpusError, match=r"b\.txt line 3: not valid UTF-8 \(byte 0xff\)"):
        read_corpus(tmp_path)


def test_jsonl(tmp_path):
    lines = [
        {"text": "Cats purr and cats sleep", "label": "pets", "id": "c1"},
        {"text": "Dogs bark"},
        {"text": "Stocks fell", "label": 7},
    ]
    body = "\n".join(json.dumps(x) for x in lines[:2]) + "\n\n" + json.dumps(lines[2])
    p = _write(tmp_path / "d.jsonl", body)
    c = read_corpus(p, **KEEP_ALL)
    assert c.doc_names == ("c1", "line 2", "line 4")
    assert c.label_names == ("7", "pets") and c.labels.tolist() == [1, -1, 0]
    assert _words(c, 0) == ["cats", "purr", "cats", "sleep"]
    unlabelled = _write(tmp_path / "u.jsonl", '{"text": "a cat"}\n{"text": "a dog"}\n')
    assert read_corpus(unlabelled, **KEEP_ALL).labels is None


@pytest.mark.parametrize(
    "body, message",
    [
        (b'{"text": "ok"}\n{"text": oops}\n', r"line 2: not valid JSON"),
        (b'{"text": "ok"}\n["text"]\n', r"line 2: expected an object with a string \"text\""),
        (b'{"body": "ok"}\n', r"line 1: expected an object"),
        (b'{"text": "ok", "label": [1]}\n', r"line 1: \"label\" must be"),
        (b'{"text": "ok"}\n\n{"text": "caf\xe9"}\n', r"line 3: not valid UTF-8 \(byte 0xe9\)"),
        (b"\n\n", r"has no documents"),
    ],
)
def test_jsonl_errors_name_file_and_line(tmp_path, body, message):
    p = _write(tmp_path / "bad.jsonl", body)
    with pytest.raises(CorpusError, match=message) as err:
        read_corpus(p, **KEEP_ALL)
    assert "bad.jsonl" in str(err.value) and "\n" not in str(err.value)


def _uci(folder: Path, triples, vocab, *, gz=False, header=None) -> Path:
    d = 1 + max(t[0] for t in triples)
    header = header or (d, len(vocab), len(triples))
    body = "\n".join(map(str, header)) + "\n" + "".join(f"{a + 1} {b + 1} {c}\n" for a, b, c in triples)
    name = folder / ("docword.toy.txt.gz" if gz else "docword.toy.txt")
    _write(name, gzip.compress(body.encode()) if gz else body)
    _write(folder / "vocab.toy.txt", "\n".join(vocab) + "\n")
    return name


TRIPLES = [(0, 0, 2), (0, 2, 1), (1, 1, 3), (1, 2, 1), (3, 0, 1), (3, 3, 1)]
VOCAB = ["apple", "banana", "cherry", "date"]


@pytest.mark.parametrize("gz", [False, True])
def test_uci_bag_of_words(tmp_path, gz):
    path = _uci(tmp_path, TRIPLES, VOCAB, gz=gz)
    for target in (path, tmp_path):
        c = read_corpus(target, **KEEP_ALL)
        assert c.n_docs == 3 and c.doc_names == ("1", "2", "4")  # document 3 has no words
        counts = np.zeros((3, 4), dtype=int)
        for d in range(3):
            for w in _words(c, d):
                counts[d, VOCAB.index(w)] += 1
        assert counts.tolist() == [[2, 0, 1, 0], [0, 3, 1, 0], [1, 0, 0, 1]]
    # the vocabulary options filter the given words (df: apple 2, banana 1, cherry 2, date 1)
    filtered = read_corpus(path, min_df=2, max_df=1.0)
    assert filtered.vocab == ("apple", "cherry") and filtered.n_tokens == 5
    remapped = read_corpus(path, vocabulary=Vocabulary(["date", "apple"]))
    assert remapped.vocab == ("date", "apple") and sorted(remapped.words.tolist()) == [0, 1, 1, 1]


def test_uci_errors(tmp_path):
    path = _uci(tmp_path, TRIPLES, VOCAB)
    text = path.read_text().splitlines()
    _write(path, "\n".join(text[:5] + ["2 two 3"] + text[6:]) + "\n")
    with pytest.raises(CorpusError, match=r"docword.toy.txt line 6: expected 'docID wordID count'"):
        read_corpus(path)
    _write(path, "\n".join(text[:5] + ["2 9 3"] + text[6:]) + "\n")
    with pytest.raises(CorpusError, match=r"line 6: wordID out of range 1..4"):
        read_corpus(path)
    _uci(tmp_path, TRIPLES, VOCAB, header=(4, 4, 9))
    with pytest.raises(CorpusError, match="header says NNZ=9 but the file has 6 entries"):
        read_corpus(path)
    _uci(tmp_path, TRIPLES, VOCAB)
    _write(tmp_path / "vocab.toy.txt", b"apple\nbanana\nch\xe9rry\ndate\n")
    with pytest.raises(CorpusError, match=r"vocab.toy.txt line 3: not valid UTF-8"):
        read_corpus(path)
    (tmp_path / "vocab.toy.txt").unlink()
    with pytest.raises(CorpusError, match="missing its vocabulary file"):
        read_corpus(path)


def test_unknown_format_and_options(tmp_path):
    p = _write(tmp_path / "data.csv", "text,label\n")
    with pytest.raises(CorpusError, match="unknown corpus format"):
        read_corpus(p)
    with pytest.raises(CorpusError, match="unknown corpus option"):
        read_corpus(p, min_dff=3)


def test_save_and_load_corpus_round_trip(tmp_path):
    from fedtopic.corpus.store import load_corpus, save_corpus

    _write(tmp_path / "docs" / "a" / "1.txt", "red green blue")
    _write(tmp_path / "docs" / "b" / "2.txt", "green blue ünïcode")
    c = read_corpus(tmp_path / "docs", **KEEP_ALL)
    save_corpus(c, tmp_path / "c.npz")
    back = load_corpus(tmp_path / "c.npz")
    assert np.array_equal(back.words, c.words) and np.array_equal(back.doc_ptr, c.doc_ptr)
    assert np.array_equal(back.labels, c.labels) and back.vocab == c.vocab
    assert back.label_names == c.label_names and back.doc_names == c.doc_names
    _write(tmp_path / "junk.npz", b"junk")
    with pytest.raises(CorpusError, match="is not a saved fedtopic corpus"):
        load_corpus(tmp_path / "junk.npz")
    with pytest.raises(CorpusError, match="no such corpus file"):
        load_corpus(tmp_path / "absent.npz")
