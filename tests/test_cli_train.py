"""`fedtopic train|topics|infer|data` end to end on real (small) data, and their one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fedtopic.cli.main import main
from fedtopic.runs.folder import SUMMARY_KEYS


def _train(tmp_path: Path, *extra: str) -> Path:
    out = tmp_path / "run"
    code = main(["train", "--dataset", "synthetic", "--topics", "10", "--iterations", "12", "--eval-every", "4", "--out", str(out), *extra])
    assert code == 0
    return out


def test_centralized_run_folder_has_summary_topics_model_and_plots(tmp_path, capsys):
    out = _train(tmp_path, "--format", "json")
    printed = json.loads(capsys.readouterr().out)
    summary = json.loads((out / "summary.json").read_text())
    assert all(k in summary for k in SUMMARY_KEYS)
    assert printed["perplexity"] == summary["perplexity"]
    assert summary["algorithm"] == "centralized-lda" and summary["topics"] == 10
    # 12 sweeps on synthetic data already beat a uniform model (perplexity V) by far
    assert summary["perplexity"] < 0.5 * summary["vocabulary"]
    assert -1.0 <= summary["npmi"] <= 1.0 and 0 < summary["topic_diversity"] <= 1
    assert summary["macro_f1"] > 0.5  # labels = parties with private topics
    curve = summary["perplexity_curve"]["0"]
    assert [it for it, _ in curve] == [4, 8, 12] and curve[-1][1] < curve[0][1]
    for name in ("topics.json", "model.npz", "vocab.json", "perplexity.png", "loglik.png"):
        assert (out / name).stat().st_size > 0
    assert len(json.loads((out / "topics.json").read_text())) == 10


def test_same_seed_same_result(tmp_path):
    a = json.loads((_train(tmp_path / "a") / "summary.json").read_text())
    b = json.loads((_train(tmp_path / "b") / "summary.json").read_text())
    assert a["perplexity"] == b["perplexity"] and a["npmi"] == b["npmi"]


def test_centralized_over_parties_keeps_labels_aligned(tmp_path):
    # pooled documents come in party order; F1 must use labels in that same order
    one = json.loads((_train(tmp_path / "one") / "summary.json").read_text())
    many = json.loads((_train(tmp_path / "many", "--parties", "4") / "summary.json").read_text())
    assert many["macro_f1"] > 0.5 and abs(many["macro_f1"] - one["macro_f1"]) < 0.25


def test_local_lda_trains_one_model_per_party(tmp_path):
    out = _train(tmp_path, "--algorithm", "local-lda", "--parties", "3")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["parties"] == 3 and len(summary["per_party"]) == 3
    assert set(summary["perplexity_curve"]) == {"0", "1", "2"}


def test_topics_and_infer_read_the_run(tmp_path, capsys):
    corpus = tmp_path / "docs.jsonl"
    lines = [
        {"text": "apple banana cherry fruit salad apple banana", "label": "food"},
        {"text": "engine wheel brake car road engine wheel", "label": "car"},
    ] * 20
    corpus.write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    out = tmp_path / "run"
    assert main(["train", "--corpus", str(corpus), "-k", "2", "--opt", "alpha=0.1", "--iterations", "30", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["topics", str(out), "--format", "json"]) == 0
    topics = json.loads(capsys.readouterr().out)
    assert len(topics) == 2 and all(len(t["words"]) >= 5 for t in topics)
    assert main(["infer", str(out), "--text", "banana apple cherry", "--text", "zzz qqq", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result[0]["known_tokens"] == 3 and max(result[0]["theta"]) > 0.8
    assert result[1]["known_tokens"] == 0
    # a whole collection: a folder of .txt files and a .jsonl, each document kept with its id (a folder was a
    # 49-line IsADirectoryError traceback)
    folder = tmp_path / "new"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("apple banana cherry", encoding="utf-8")
    (folder / "sub" / "b.txt").write_text("engine wheel brake", encoding="utf-8")
    docs = tmp_path / "new.jsonl"
    docs.write_text(json.dumps({"id": "doc-7", "text": "car road engine"}) + "\n" + json.dumps({"text": "fruit"}) + "\n")
    theta_csv = tmp_path / "theta.csv"
    assert main(["infer", str(out), "--file", str(folder), "--file", str(docs), "--out", str(theta_csv),
                 "--format", "json"]) == 0
    rows = [line.split(",") for line in theta_csv.read_text().splitlines()]
    assert rows[0] == ["document", "topic_0", "topic_1"]
    assert [r[0] for r in rows[1:]] == ["a.txt", "sub/b.txt", "doc-7", "line 2"]
    assert all(abs(sum(map(float, r[1:])) - 1) < 1e-4 for r in rows[1:])
    # --lines: one document per non-empty line of a text file (without it, the file is one document)
    listing = tmp_path / "list.txt"
    listing.write_text("banana apple cherry\n\ncar road engine\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["infer", str(out), "--file", str(listing), "--lines", "--format", "json"]) == 0
    per_line = json.loads(capsys.readouterr().out)
    assert [d["document"] for d in per_line] == ["list.txt:1", "list.txt:3"]
    assert per_line[0]["top_topics"][0]["topic"] != per_line[1]["top_topics"][0]["topic"]
    # a truncated model is an error, not the topics of a model that is no longer there
    model = out / "model.npz"
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    capsys.readouterr()
    assert main(["topics", str(out)]) == 2
    assert "corrupt or truncated" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["train", "--dataset", "no-such-set"], "unknown dataset"),
        (["train", "--corpus", "/nonexistent/corpus.jsonl"], "no such file"),
        (["train", "--dataset", "synthetic", "--algorithm", "magic"], "unknown algorithm"),
        (["topics", "/nonexistent/run"], "no topics.json"),
        (["infer", "/nonexistent/run", "--text", "x"], "not a run folder"),
    ],
)
def test_bad_input_is_one_line_and_nonzero(tmp_path, capsys, args, needle):
    assert main([*args, "--out", str(tmp_path / "r")] if args[0] == "train" else args) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err.lower() and len(err.splitlines()) == 1 and "Traceback" not in err


def test_k_below_two_is_a_usage_error(tmp_path, capsys):
    assert main(["train", "--dataset", "synthetic", "-k", "1", "--out", str(tmp_path / "r")]) == 2
    assert "--topics" in capsys.readouterr().err


def test_non_utf8_and_empty_corpora_are_refused(tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a.txt").write_bytes(b"caf\xe9 au lait and more words here\n")
    assert main(["train", "--corpus", str(bad), "--out", str(tmp_path / "r1")]) == 2
    assert "utf-8" in capsys.readouterr().err.lower()
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"text": "the and of"}) + "\n", encoding="utf-8")
    assert main(["train", "--corpus", str(empty), "--out", str(tmp_path / "r2")]) == 2
    assert "empty" in capsys.readouterr().err.lower()


def test_data_list_and_info(capsys):
    assert main(["data", "list", "--format", "json"]) == 0
    names = {d["name"] for d in json.loads(capsys.readouterr().out)}
    assert {"bbc-news", "20newsgroups", "reuters-r8", "reuters-r52", "synthetic"} <= names
    assert main(["data", "info", "synthetic", "--format", "json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["vocabulary"] == 5000 and info["train_documents"] > 0


@pytest.mark.parametrize("topics", ["1000000000000", "100000000"])
@pytest.mark.parametrize("command", ["train", "simulate"])
def test_a_model_that_cannot_fit_is_refused_in_one_line(tmp_path, capsys, topics, command):
    """-k 1e12 overflowed into a negative length and -k 1e8 asked numpy for 1.2 TiB, both as tracebacks."""
    code = main([command, "--dataset", "synthetic", "-k", topics, "--iterations", "2", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "GiB is available: lower -k" in err, err


def test_the_memory_estimate_covers_every_partys_topic_word_matrix():
    from fedtopic.algorithms.memory import BYTES_PER_CELL, check_model_fits, model_bytes
    from fedtopic.corpus.synthetic import generate_synthetic
    from fedtopic.errors import ModelError

    parts = generate_synthetic(n_parties=3, n_topics=8, n_shared=5, n_words=200, docs_per_party=30).parties
    need = model_bytes(parts, 50)
    assert need == BYTES_PER_CELL * 50 * (90 + 3 * 200)
    check_model_fits(parts, 50, available=need)
    with pytest.raises(ModelError, match="lower -k"):
        check_model_fits(parts, 50, available=need - 1)


def test_the_run_says_each_step_after_training(tmp_path):
    """run_baseline names what it does after the sweeps (at K = 1,000 the fold-in outlasts a few sweeps)."""
    from _lda_synth import synthetic_lda

    from fedtopic.algorithms.base import Mode
    from fedtopic.cli.algo_options import resolve
    from fedtopic.corpus.training_data import split_corpus
    from fedtopic.simulation.baseline_run import run_baseline

    corpus, _ = synthetic_lda(60, 30, 40, 3, seed=0)
    data = split_corpus("synthetic", corpus, n_parties=1, scheme="a", seed=0)
    _, spec = resolve("centralized-lda", Mode.centralised, "test", 3, 4, 0, [])
    stages: list[str] = []
    sweeps: list[int] = []
    run_baseline(data, "centralized-lda", spec, tmp_path, eval_every=2, stage=stages.append,
                 progress=lambda party, iteration, metrics: sweeps.append(iteration) or stages.append("sweep"))
    assert sweeps == [1, 2, 3, 4]
    assert stages[:4] == ["sweep"] * 4
    assert [s.split(":")[0] for s in stages[4:]] == ["scoring", "writing the run folder", "scoring"]
    assert "held-out perplexity" in stages[4] and "c_v" in stages[6]
