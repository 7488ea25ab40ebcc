"""Engines as a layer: the registry (built-in and plugin), the threads engine's contract (results in party order,
slots bound the parties computing at once, the first failure one line naming the party), and a plugin engine that
``simulate`` runs a consortium on, to the same model as the default."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from _texts import theme_texts, write_jsonl

from fedtopic.cli.main import main
from fedtopic.engines import engine_names, get_engine
from fedtopic.errors import ConfigError, TrainingError

TESTS = Path(__file__).resolve().parent


def test_threads_returns_results_in_party_order_within_its_slots():
    busy, most, lock = [0], [0], threading.Lock()

    def work(i: int, slots) -> int:
        with slots:
            with lock:
                busy[0] += 1
                most[0] = max(most[0], busy[0])
            time.sleep(0.02 * (5 - i))  # later parties finish first
            with lock:
                busy[0] -= 1
        return i * i

    assert get_engine("threads").run([f"p{i}" for i in range(5)], work, slots=2) == [0, 1, 4, 9, 16]
    assert most[0] == 2


def test_threads_stops_at_the_first_failure_naming_the_party():
    def work(i: int, slots) -> int:
        if i == 1:
            raise ValueError("bad shard")
        time.sleep(0.01)
        return i

    with pytest.raises(TrainingError, match="party p2 failed: bad shard"):
        get_engine("threads").run(["party p1", "party p2", "party p3"], work, slots=3)


def test_the_registry_takes_plugins_and_refuses_replacing_a_built_in(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("FEDTOPIC_ENGINES", "sequential=plugins.sequential_engine:SequentialEngine")
    assert engine_names() == ("threads", "ray", "sequential")
    assert get_engine("sequential").name == "sequential"
    monkeypatch.setenv("FEDTOPIC_ENGINES", "threads=plugins.sequential_engine:SequentialEngine")
    with pytest.raises(ConfigError, match="built-in engine and cannot be replaced"):
        engine_names()
    monkeypatch.delenv("FEDTOPIC_ENGINES")
    with pytest.raises(ConfigError, match="unknown engine 'spark'; known: threads, ray"):
        get_engine("spark")


def test_simulate_on_a_plugin_engine_trains_the_default_engines_model(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FEDTOPIC_ENGINES", "sequential=plugins.sequential_engine:SequentialEngine")
    monkeypatch.syspath_prepend(str(TESTS))
    corpus = write_jsonl(tmp_path / "docs.jsonl", theme_texts(60, seed=2))
    phis = {}
    for engine in ("threads", "sequential"):
        out = tmp_path / engine
        assert main(["simulate", "--algorithm", "csfed-lda", "--corpus", str(corpus), "--parties", "3", "-k", "3",
                     "--iterations", "3", "--protection", "mask", "--engine", engine, "--out", str(out),
                     "--format", "json"]) == 0
        json.loads(capsys.readouterr().out)
        assert json.loads((out / "run-info.json").read_text())["engine"] == engine
        with np.load(out / "model.npz") as npz:
            phis[engine] = npz["phi"]
    np.testing.assert_array_equal(phis["threads"], phis["sequential"])
    assert main(["simulate", "--algorithm", "csfed-lda", "--corpus", str(corpus), "--parties", "2", "-k", "3",
                 "--iterations", "1", "--engine", "spark", "--out", str(tmp_path / "x")]) == 2
    assert "unknown engine 'spark'" in capsys.readouterr().err
