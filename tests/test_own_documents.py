"""Bringing one's own documents: `simulate --corpus`, `vocab build | merge`, node runs with --corpus --vocab, and
the Python API, each from raw text files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _csfed_setup import make_consortium, run_parties
from _texts import THEMES, theme_texts, write_jsonl

import fedtopic
from fedtopic.cli.main import main
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.simulation.aggregator_proc import AggregatorProcess

pytestmark = pytest.mark.xdist_group("agg-own_documents")


def test_simulate_csfed_on_a_corpus_file(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "my.jsonl", theme_texts(120, seed=1))
    out = tmp_path / "run"
    assert main(["simulate", "--algorithm", "csfed-lda", "--corpus", str(corpus), "--parties", "4", "-k", "2",
                 "--iterations", "30", "--opt", "alpha=0.1", "--out", str(out), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["parties"] == 4 and summary["dataset"] == str(corpus) and summary["rounds"] == 30
    topics = [set(t["words"][:5]) for t in json.loads((out / "topics.json").read_text())]
    themes = [set(words) for words in THEMES.values()]
    assert all(any(len(t & th) >= 4 for th in themes) for t in topics)  # each topic is one theme


def test_vocab_build_merge_then_node_runs_on_own_documents(tmp_path, capsys):
    config, cfg = make_consortium(tmp_path / "c", protection="none", iterations=4)
    corpora = {pid: write_jsonl(tmp_path / f"{pid}.jsonl", theme_texts(40 + 10 * i, seed=10 + i))
               for i, pid in enumerate(cfg.party_ids)}
    counts = []
    for pid, corpus in corpora.items():
        counts.append(tmp_path / f"{pid}-vocab.json")
        assert main(["vocab", "build", str(corpus), "--out", str(counts[-1]), "--format", "json"]) == 0
    vocab = tmp_path / "vocab.json"
    assert main(["vocab", "merge", *map(str, counts), "--out", str(vocab), "--min-df", "1", "--max-df", "1.0", "--format", "json"]) == 0
    merged = json.loads(vocab.read_text())
    assert sorted(merged["words"]) == sorted(w for words in THEMES.values() for w in words)
    assert merged["documents"] == sum(40 + 10 * i for i in range(3))
    assert main(["vocab", "merge", *map(str, counts), "--out", str(vocab)]) == 2  # refuses to overwrite
    capsys.readouterr()
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        results = run_parties(config, cfg, agg.url, per_party={pid: {"corpus": corpora[pid]} for pid in corpora},
                              vocab=vocab)
    assert all(isinstance(r, dict) for r in results.values()), results
    phis = [np.load(config.parent / "state" / pid / "model" / "model.npz")["phi"] for pid in cfg.party_ids]
    assert all(np.array_equal(phis[0], p) for p in phis[1:])
    # a run folder's vocab.json is a vocabulary too
    run_vocab = config.parent / "state" / "p1" / "model" / "vocab.json"
    assert Vocabulary.from_json(run_vocab.read_text()).words == tuple(merged["words"])


def test_python_api_train_infer_save_load_simulate(tmp_path):
    texts = theme_texts(80, seed=3)
    model = fedtopic.train(texts, topics=2, iterations=40, seed=1, alpha=0.1)
    tops = [set(words) for words in model.top_words(5)]
    assert all(any(len(t & set(th)) >= 4 for th in THEMES.values()) for t in tops)
    theta = model.transform(["football goal team striker", "bank market stock price"])
    assert theta.shape == (2, 2) and np.allclose(theta.sum(axis=1), 1) and theta[0].argmax() != theta[1].argmax()
    assert np.array_equal(model.transform(["football goal"], seed=4), model.transform(["football goal"], seed=4))
    model.save(tmp_path / "m")
    again = fedtopic.load(tmp_path / "m")
    assert np.array_equal(again.phi, model.phi) and again.vocab == model.vocab and again.algorithm == "centralized-lda"
    run = fedtopic.simulate(texts, algorithm="dafed-lda", parties=3, topics=2, iterations=10, seed=2, steps=2,
                            out=tmp_path / "sim")
    assert run.summary["algorithm"] == "dafed-lda" and run.summary["steps"] == 2 and run.model.n_topics == 2
    with pytest.raises(fedtopic.api.ConfigError, match="has no option 'stepz'"):
        fedtopic.train(texts, topics=2, iterations=2, stepz=1)


def test_vocab_align_through_the_aggregator_gives_every_party_the_same_union(tmp_path, capsys):
    from concurrent.futures import ThreadPoolExecutor

    from fedtopic.node.vocab_align import align_vocabulary

    config, cfg = make_consortium(tmp_path / "c", protection="none", iterations=4)
    corpora = {pid: write_jsonl(tmp_path / f"{pid}.jsonl", theme_texts(30 + 10 * i, seed=20 + i))
               for i, pid in enumerate(cfg.party_ids)}
    first, *others = cfg.party_ids
    out = tmp_path / f"{first}-vocab.json"
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg, ThreadPoolExecutor(len(others)) as pool:
        futures = [pool.submit(align_vocabulary, cfg, config, pid, corpora[pid], url=agg.url, min_df=1, max_df=1.0,
                               timeout=60, say=lambda _: None) for pid in others]
        assert main(["vocab", "align", str(corpora[first]), "--config", str(config), "--party", first,
                     "--url", agg.url, "--min-df", "1", "--max-df", "1.0", "--timeout", "60",
                     "--out", str(out), "--format", "json"]) == 0
        unions = [f.result(timeout=60) for f in futures]
        # a party whose key is not its own is refused before anything is posted
        assert main(["vocab", "align", str(corpora[first]), "--config", str(config), "--party", first,
                     "--key", str(config.parent / "keys" / f"{others[0]}.key.json"), "--url", agg.url,
                     "--out", str(tmp_path / "x.json")]) == 2
    written = Vocabulary.from_json(out.read_text())
    assert out.stat().st_mode & 0o777 == 0o600 and not (tmp_path / "x.json").exists()  # owner-only; none if refused
    assert all(u == written for u in unions)
    assert sorted(written.words) == sorted(w for words in THEMES.values() for w in words)
    assert json.loads(capsys.readouterr().out)["words"] == len(written)


def test_vocab_align_with_counts_is_the_centralised_merge(tmp_path, capsys):
    """gFedNTM's consensus: every party posts its words with counts, all receive the pooled counts and apply the
    same cut, which equals merging the parties' count files offline (the vocabulary of the pooled corpus)."""
    from concurrent.futures import ThreadPoolExecutor

    from fedtopic.corpus.readers import read_corpus
    from fedtopic.corpus.vocab_counts import VocabularyCounts, merge_counts
    from fedtopic.node.vocab_align import align_vocabulary_counts

    config, cfg = make_consortium(tmp_path / "c", protection="none", iterations=4)
    corpora = {pid: write_jsonl(tmp_path / f"{pid}.jsonl", theme_texts(30 + 10 * i, seed=40 + i))
               for i, pid in enumerate(cfg.party_ids)}
    first, *others = cfg.party_ids
    out = tmp_path / "vocab.json"
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg, ThreadPoolExecutor(len(others)) as pool:
        futures = [pool.submit(align_vocabulary_counts, cfg, config, pid, corpora[pid], url=agg.url, min_df=3,
                               max_df=0.9, max_size=10, timeout=60, say=lambda _: None) for pid in others]
        assert main(["vocab", "align", str(corpora[first]), "--config", str(config), "--party", first,
                     "--url", agg.url, "--with-counts", "--min-df", "3", "--max-df", "0.9", "--max-size", "10",
                     "--timeout", "60", "--out", str(out), "--format", "json"]) == 0
        results = [f.result(timeout=60) for f in futures]
    written = VocabularyCounts.load(out)
    offline = merge_counts([VocabularyCounts.from_corpus(read_corpus(corpora[p], min_df=1, max_df=1.0))
                            for p in cfg.party_ids], min_df=3, max_df=0.9, max_size=10)
    for got in [written, *results]:
        assert got.words == offline.words and got.documents == offline.documents
        assert np.array_equal(got.document_frequency, offline.document_frequency)
        assert np.array_equal(got.term_frequency, offline.term_frequency)
    assert len(written.words) == 10


def test_python_simulate_takes_a_port_and_a_round_callback_and_cleans_its_temporary_folder(tmp_path):
    """Issue 46, item 13: `fedtopic.simulate(port=, on_round=)`, `dir(fedtopic)` lists the API, and a run without
    `out` leaves nothing behind when the process exits."""
    import socket
    import subprocess
    import sys
    import threading

    from fedtopic.ledger.local_nodes import REPO_ROOT

    assert {"train", "simulate", "load", "TopicModel", "SimulationRun", "RoundInfo"} <= set(dir(fedtopic))
    texts = theme_texts(60, seed=5)
    seen, lock = [], threading.Lock()

    def on_round(info):
        with lock:
            seen.append(info)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = fedtopic.simulate(texts, algorithm="csfed-lda", parties=3, topics=2, iterations=4, seed=1, port=port,
                            on_round=on_round, out=tmp_path / "sync")
    assert run.summary["rounds"] == 4 and f":{port}" in (tmp_path / "sync" / "aggregator.log").read_text()
    assert {(i.party, i.round) for i in seen} == {(p, r) for p in ("p1", "p2", "p3") for r in range(5)}
    assert all(i.rounds == 4 for i in seen) and any(i.quality is not None for i in seen)
    seen.clear()
    fedtopic.simulate(texts, algorithm="dafed-lda", parties=3, topics=2, iterations=3, seed=1, on_round=on_round,
                      out=tmp_path / "async")
    assert {i.round for i in seen} <= {1, 2, 3} and all(i.rounds == 3 for i in seen) and seen
    code = ("import fedtopic; r = fedtopic.simulate(['football match goal team', 'bank market stock price', "
            "'football goal bank team', 'market price stock match'] * 10, max_df=1.0, algorithm='dafed-lda', "
            "parties=2, topics=2, iterations=2); print(r.run_dir)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True,
                         env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})
    folder = out.stdout.strip().splitlines()[-1]
    assert folder and not __import__("pathlib").Path(folder).exists()


def test_the_default_alpha_lets_short_documents_take_sides():
    """Issue 66 item 5: under the old default α = 50/K (12.5 at K 4) every short document's θ was near uniform, so a
    sports sentence and a money sentence got the same mixture; tomotopy's 0.1, the default now, tells them apart."""

    model = fedtopic.train(theme_texts(300, seed=1, length=8), topics=4, iterations=100, seed=0)
    sport, money = model.transform(["football goal striker keeper", "bank stock dividend bond"])
    assert model.alpha == 0.1
    assert 0.5 * np.abs(sport - money).sum() > 0.8, (sport, money)  # 0.04 at α 12.5
