"""The one synchronous party runtime: an algorithm defined in the test suite (``plugins/fedavg_vector.py``) runs
through ``fedtopic simulate`` and through three ``fedtopic node run`` processes with a kill -9, without a line of
fedtopic naming it; the history it writes; what a restart refuses."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _texts import theme_texts, write_jsonl

from fedtopic.cli.main import main
from fedtopic.runs.history import (
    SCHEMA,
    HistoryLine,
    HistoryWriter,
    latest_per_round,
    read_history,
)

TESTS = Path(__file__).resolve().parent
PLUGIN = "fedavg-vector=plugins.fedavg_vector:FedAvgVector"


@pytest.fixture()
def plugin(monkeypatch):
    monkeypatch.setenv("FEDTOPIC_ALGORITHMS", PLUGIN)
    monkeypatch.setenv("PYTHONPATH", str(TESTS))  # the aggregator and node children import the plugin too


def expected(parties: list, rate: float, rounds: int) -> np.ndarray:
    """x after ``rounds`` steps from uniform towards the document-weighted mean m: m + (1 − η)^T (x⁰ − m)."""
    from plugins.fedavg_vector import VectorParty

    from fedtopic.algorithms.base import TrainSpec

    ps = [VectorParty(f"p{i}", c, TrainSpec(2, rounds, 0, {"rate": rate})) for i, c in enumerate(parties)]
    m = sum(p.n * p.f for p in ps) / sum(p.n for p in ps)
    return m + (1 - rate) ** rounds * (ps[0].x - m)


@pytest.mark.parametrize("protection", ["none", "mask"])
def test_a_plugin_algorithm_through_simulate(tmp_path, capsys, plugin, protection):
    from fedtopic.corpus.training_data import load_training_data

    corpus = write_jsonl(tmp_path / "docs.jsonl", theme_texts(90, seed=1))
    out = tmp_path / "run"
    assert main(["simulate", "--algorithm", "fedavg-vector", "--corpus", str(corpus), "--parties", "3", "-k", "2",
                 "--iterations", "6", "--opt", "rate=0.4", "--protection", protection, "--out", str(out),
                 "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rounds"] == 6 and summary["parties_hold_same_x"] and summary["protection"] == protection
    data = load_training_data(dataset=None, corpus=corpus, n_parties=3, scheme="a", seed=0, progress=False)
    with np.load(out / "model.npz") as npz:
        x = npz["phi"][0]
    np.testing.assert_allclose(x, expected(data.parties, 0.4, 6), rtol=0, atol=1e-12)
    for pid in ("p1", "p2", "p3"):
        rows = read_history(out / "history" / f"{pid}.jsonl")
        assert [r["round"] for r in rows] == list(range(6)) and {r["schema"] for r in rows} == {SCHEMA}
        assert all(r["contributors"] == ["p1", "p2", "p3"] and r["bytes_up"] > 0 and r["bytes_down"] > 0
                   and r["quality_name"] == "l1_to_own" for r in rows)
        assert rows[0]["top_words"] is not None and rows[1]["top_words"] is None and rows[-1]["top_words"] is not None


@pytest.mark.timeout(180)  # a start that waited for its round would deadlock here (see the plugin's docstring)
@pytest.mark.parametrize("protection", ["none", "mask"])
def test_started_exchanges_run_while_the_party_sums_another(tmp_path, capsys, plugin, protection):
    """``crossed=1``: half the parties start ``mean`` and sum ``count``, half the other way round; the same x as
    through one channel."""
    from fedtopic.corpus.training_data import load_training_data

    corpus = write_jsonl(tmp_path / "docs.jsonl", theme_texts(90, seed=1))
    out = tmp_path / "run"
    assert main(["simulate", "--algorithm", "fedavg-vector", "--corpus", str(corpus), "--parties", "4", "-k", "2",
                 "--iterations", "4", "--opt", "rate=0.4", "--opt", "crossed=1", "--protection", protection,
                 "--out", str(out), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rounds"] == 4 and summary["parties_hold_same_x"]
    data = load_training_data(dataset=None, corpus=corpus, n_parties=4, scheme="a", seed=0, progress=False)
    with np.load(out / "model.npz") as npz:
        x = npz["phi"][0]
    np.testing.assert_allclose(x, expected(data.parties, 0.4, 4), rtol=0, atol=1e-12)
    rows = read_history(out / "history" / "p2.jsonl")
    assert [r["round"] for r in rows] == list(range(4))
    assert all(r["contributors"] == ["p1", "p2", "p3", "p4"] and r["bytes_up"] > 0 for r in rows)


def test_a_party_may_not_leave_an_exchange_running_past_its_step(tmp_path):
    """The runtime's guards: a step that returns with a started exchange not ended, and a second exchange on a
    channel whose first is still under way, stop the run with one line each."""
    import threading

    from fedtopic.errors import TrainingError
    from fedtopic.node.sync_runtime import _Exchange, _Meter, _Pending

    class Alone:  # an in-memory channel of a one-party round: the aggregate is the party's own update
        def encode(self, update, seq):
            return np.asarray(update, dtype=np.float64).tobytes()

        def send(self, payload, seq, timeout, on_wait=None):
            from fedtopic.network.client import AggregateResult

            return AggregateResult(seq, payload, ("p1",), (), "complete")

        def decode(self, result, seq):
            from fedtopic.algorithms.federated import Aggregate

            return Aggregate(np.frombuffer(result.payload), tuple(result.contributors))

    lock = threading.Lock()
    ex = _Exchange({"a": Alone(), "b": Alone()}, _Pending(None), _Meter(), 5.0, lambda: None, lock=lock)
    with lock:
        flight = ex.start("a", 0, np.array([1.0, 2.0]))
        with pytest.raises(TrainingError, match="before its last exchange there ended"):
            ex.sum("a", 1, np.array([3.0]))
        assert ex.sum("b", 0, np.array([4.0])).value.tolist() == [4.0]
        assert ex.in_flight == {"a"}
        assert flight.result().value.tolist() == [1.0, 2.0] and ex.in_flight == set()
        assert flight.result() is flight.result()  # decoded and metered once
    assert ex.meter.bytes_up == 24 and ex.meter.bytes_down == 24


def _vector_consortium(root: Path, protection: str):
    """(consortium.toml, its config) of three parties training the plugin's fedavg-vector for 8 rounds."""
    from _csfed_setup import make_consortium

    from fedtopic.consortium.config import load_consortium, save_consortium

    config, cfg = make_consortium(root, protection=protection, iterations=8)
    cfg = cfg.model_copy(update={"algorithm": cfg.algorithm.model_copy(update={
        "name": "fedavg-vector", "topics": 2, "options": {"rate": 0.3}})})
    save_consortium(cfg, config)
    return config, load_consortium(config)


def test_a_plugin_algorithm_through_node_processes_with_a_kill(tmp_path, plugin):
    """Three nodes under mask; p2 killed -9 after round 1 resumes from its checkpoint and every party ends with
    the bits of a run without the kill."""
    from _node_procs import run_node_processes

    from fedtopic.simulation.aggregator_proc import AggregatorProcess

    results = {}
    for label, kill in (("clean", False), ("killed", True)):
        config, cfg = _vector_consortium(tmp_path / label, "mask")
        logs = {p: tmp_path / f"{label}-{p}.log" for p in cfg.party_ids}
        with AggregatorProcess(config, tmp_path / f"{label}-agg", tmp_path / f"{label}-agg.log") as agg:
            outs = run_node_processes(config, cfg.party_ids, agg.url, logs, kill="p2" if kill else None,
                                      after="p2 round 2/")
        summaries = {p: json.loads(out) for p, out in outs.items()}
        assert all(s["rounds"] == 8 and s["protection"] == "mask" for s in summaries.values())
        xs = [np.load(config.parent / "state" / p / "model" / "model.npz")["phi"] for p in cfg.party_ids]
        assert all(np.array_equal(xs[0], x) for x in xs[1:])
        results[label] = xs[0]
        if kill:
            assert "p2: resumed at round " in logs["p2"].read_text()  # wherever the kill landed (rounds are fast)
            rows = read_history(config.parent / "state" / "p2" / "history.jsonl")
            assert [r["round"] for r in latest_per_round(rows)] == list(range(8))
            assert sum(r["resumed"] for r in rows) == 1
    assert np.array_equal(results["clean"], results["killed"])


class _Killed(BaseException):
    """A party's thread stopped dead (what a kill -9 leaves: nothing after the point it struck runs)."""


def _p2_killed_after_round_2(tmp_path, monkeypatch, between=lambda config: None,
                              said: list[str] | None = None) -> tuple[Path, dict[str, object]]:
    """Three vector-plugin nodes as threads through a real aggregator; p2 stopped dead just after the checkpoint of
    round 2 (what a kill -9 leaves), ``between(config)`` run, p2 restarted; (config, every node's summary)."""
    import threading

    from fedtopic.node import sync_runtime
    from fedtopic.node.sync_node import run_sync_node
    from fedtopic.simulation.aggregator_proc import AggregatorProcess

    config, cfg = _vector_consortium(tmp_path / "c", "none")
    write = sync_runtime.write_arrays

    def write_then_die(path, arrays):
        write(path, arrays)
        meta = arrays.get(sync_runtime._RUNTIME_KEY)
        if threading.current_thread().name == "p2-first" and meta is not None and \
                json.loads(str(meta))["round"] == 3:
            raise _Killed

    monkeypatch.setattr(sync_runtime, "write_arrays", write_then_die)
    out: dict[str, object] = {}

    def party(pid: str) -> None:
        say = said.append if said is not None and pid == "p2" else (lambda _: None)
        try:
            out[pid] = run_sync_node(cfg, config, pid, url=agg.url, say=say, round_timeout=120.0)
        except BaseException as exc:  # noqa: BLE001 - reported below
            out[pid] = exc

    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        threads = [threading.Thread(target=party, args=(pid,), name=f"{pid}-first") for pid in cfg.party_ids]
        for t in threads:
            t.start()
        threads[1].join(120)
        assert isinstance(out.pop("p2"), _Killed)
        between(config)
        again = threading.Thread(target=party, args=("p2",), name="p2-again")
        again.start()
        for t in (*threads, again):
            t.join(120)
    return config, out


def test_a_kill_right_after_a_checkpoint_loses_no_history_line(tmp_path, plugin, monkeypatch):
    """A round's history line is written before the checkpoint that marks the round done: p2, stopped dead just
    after the checkpoint of round 2, resumes at round 3 with every round in its history (in the other order the
    kill lost round 2's line, and its summary counted 7 rounds of 8)."""
    config, out = _p2_killed_after_round_2(tmp_path, monkeypatch)
    assert {pid: s["rounds"] for pid, s in out.items()} == {"p1": 8, "p2": 8, "p3": 8}, out  # type: ignore[index]
    rows = read_history(config.parent / "state" / "p2" / "history.jsonl")
    assert [r["round"] for r in latest_per_round(rows)] == list(range(8))
    assert [r["round"] for r in rows] == list(range(8))  # killed after round 2's line and checkpoint: no redo


def test_a_checkpoint_of_another_run_is_refused_in_one_line(tmp_path, plugin):
    from plugins.fedavg_vector import VectorParty

    from fedtopic.algorithms.base import TrainSpec
    from fedtopic.corpus.types import Corpus
    from fedtopic.errors import TrainingError
    from fedtopic.node.state_file import write_arrays
    from fedtopic.node.sync_runtime import CHECKPOINT, _restore, _runtime_meta

    corpus = Corpus(np.array([0, 1, 2, 1], dtype=np.int32), np.array([0, 2, 4]), ("a", "b", "c"))
    party = VectorParty("p1", corpus, TrainSpec(2, 3, 0, {"rate": 0.5}))
    write_arrays(tmp_path / CHECKPOINT, party.state() | {
        "__runtime__": _runtime_meta("p1", "fedavg-vector", {"seed": 0, "vocab_sha256": "aa"}, 2)})
    with pytest.raises(TrainingError, match=r"made for another run \(vocab_sha256 'aa' → 'bb'\); move the state"):
        _restore(tmp_path / CHECKPOINT, party, "fedavg-vector", {"seed": 0, "vocab_sha256": "bb"})
    with pytest.raises(TrainingError, match=r"algorithm 'fedavg-vector' → 'fednmf'"):
        _restore(tmp_path / CHECKPOINT, party, "fednmf", {"seed": 0, "vocab_sha256": "aa"})
    assert _restore(tmp_path / CHECKPOINT, party, "fedavg-vector", {"seed": 0, "vocab_sha256": "aa"}) == (2, {}, None)


def test_a_recomputed_update_that_differs_from_the_one_sent_is_refused(tmp_path):
    from fedtopic.errors import TrainingError
    from fedtopic.node.sync_runtime import _Pending

    pending = _Pending(tmp_path)
    first, second = np.array([1.0, 2.0]), np.array([1.0, 2.5])
    assert pending.payload("mean", 3, first, lambda: b"sent") == b"sent"
    assert pending.payload("mean", 3, first.copy(), lambda: b"other bytes, same update") == b"sent"  # as persisted
    with pytest.raises(TrainingError, match="differs from the one sent before the restart"):
        pending.payload("mean", 3, second, lambda: b"x")
    pending.clear()
    assert pending.payload("mean", 3, second, lambda: b"x") == b"x"


def test_history_appends_skips_torn_lines_and_keeps_the_last_line_per_round(tmp_path):
    path = tmp_path / "h.jsonl"
    writer = HistoryWriter(path)
    for r in range(3):
        writer.append(HistoryLine(party="p1", algorithm="a", round=r, time=float(r), quality=float("nan")))
    with open(path, "a") as fh:
        fh.write('{"schema": "fedtopic-history/1", "party": "p1", "rou')  # a crash mid-line
    again = HistoryWriter(path, resumed=True)
    again.append(HistoryLine(party="p1", algorithm="a", round=2, time=9.0, quality=1.5))
    rows = read_history(path)
    assert [r["round"] for r in rows] == [0, 1, 2, 2] and rows[0]["quality"] is None
    assert [r["time"] for r in latest_per_round(rows)] == [0.0, 1.0, 9.0] and rows[-1]["resumed"]


def test_gfedntm_checkpoints_come_more_often_than_the_aggregator_forgets():
    from fedtopic.algorithms.gfedntm.party import CHECKPOINT_EVERY, KEEP_AGGREGATES
    from fedtopic.network.store import KEEP_AGGREGATES as STORE_KEEPS

    assert KEEP_AGGREGATES == STORE_KEEPS and CHECKPOINT_EVERY < STORE_KEEPS


def test_a_plugin_may_not_replace_a_builtin(monkeypatch):
    from fedtopic.algorithms.registry import get_algorithm
    from fedtopic.errors import ConfigError

    monkeypatch.setenv("FEDTOPIC_ALGORITHMS", "fednmf=plugins.fedavg_vector:FedAvgVector")
    with pytest.raises(ConfigError, match="built-in algorithm"):
        get_algorithm("fednmf")
    monkeypatch.setenv("FEDTOPIC_ALGORITHMS", "broken")
    with pytest.raises(ConfigError, match="not name=module:object"):
        get_algorithm("fednmf")


@pytest.mark.parametrize(("algorithm", "extra"), [("csfed-lda", ["--opt", "dp.noise_multiplier=2"]),
                                                  ("dafed-lda", ["--transport", "memory"])])
def test_lda_family_simulations_write_the_history_and_its_pngs(tmp_path, capsys, algorithm, extra):
    out = tmp_path / "run"
    assert main(["simulate", "--algorithm", algorithm, "--dataset", "synthetic", "--parties", "3", "-k", "4",
                 "--iterations", "11", "--out", str(out), "--format", "json", *extra]) == 0
    capsys.readouterr()
    tens = []
    for pid in ("p1", "p2", "p3"):
        rows = latest_per_round(read_history(out / "history" / f"{pid}.jsonl"))
        assert rows and all(r["algorithm"] == algorithm and r["quality_name"] == "loglik_per_token"
                            and r["quality"] < 0 for r in rows)
        tens += [r for r in rows if r["round"] == 10]  # every 10th round carries the top words
        if algorithm == "csfed-lda":
            assert [r["round"] for r in rows] == list(range(12)) and all(r["epsilon"] > 0 for r in rows[1:])
            assert all(r["contributors"] == ["p1", "p2", "p3"] for r in rows)
        else:
            assert all(set(r["staleness"]) == {"p1", "p2", "p3"} - {pid} for r in rows)
    assert tens and all(r["top_words"] and len(r["top_words"]) == 4 for r in tens)  # a slow async party may stop
    pngs = {"quality.png", "round_time.png"} | ({"epsilon.png"} if algorithm == "csfed-lda" else set())
    assert pngs <= {p.name for p in out.glob("*.png")}


def test_a_history_cut_while_a_party_was_down_is_said_at_the_resume_and_in_the_summary(tmp_path, plugin,
                                                                                         monkeypatch):
    """p2 stopped dead after round 2's checkpoint; its history then loses round 2's line (a file cut short). The
    resumed party says which rounds its history lacks, and its summary lists them, instead of counting silently."""
    said: list[str] = []

    def cut(config: Path) -> None:
        history = config.parent / "state" / "p2" / "history.jsonl"
        lines = history.read_text().splitlines(keepends=True)
        history.write_text("".join(lines[:2]))  # rounds 0 and 1 kept, round 2's line gone

    _, out = _p2_killed_after_round_2(tmp_path, monkeypatch, cut, said)
    assert any("lacks rounds 2 " in line for line in said), said
    assert out["p2"]["history_lacks_rounds"] == [2]  # type: ignore[index]
    assert "history_lacks_rounds" not in out["p1"]  # type: ignore[operator]


@pytest.mark.parametrize("transport", ["memory", "chain"])
def test_an_asynchronous_plugin_algorithm_through_simulate(tmp_path, capsys, monkeypatch, transport):
    """An ``AsyncParty`` defined in the test suite runs through the asynchronous loop over the in-memory board and
    over encrypted channels on an embedded chain, with histories and its own run folder."""
    from fedtopic.corpus.training_data import load_training_data

    monkeypatch.setenv("FEDTOPIC_ALGORITHMS", "async-wordcount=plugins.async_wordcount:AsyncWordCount")
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    monkeypatch.syspath_prepend(str(TESTS))
    corpus = write_jsonl(tmp_path / "docs.jsonl", theme_texts(60, seed=3))
    out = tmp_path / "run"
    assert main(["simulate", "--algorithm", "async-wordcount", "--corpus", str(corpus), "--parties", "3", "-k", "3",
                 "--iterations", "4", "--max-delay", "0", "--transport", transport, "--out", str(out),
                 "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["algorithm"] == "async-wordcount" and summary["transport"] == transport
    assert summary["bytes_sent"] > 0 and max(summary["rounds"]) == 4
    data = load_training_data(dataset=None, corpus=corpus, n_parties=3, scheme="a", seed=0, progress=False)
    total = np.zeros((data.train.n_words, 3))
    for part in data.parties:
        np.add.at(total, (part.words, part.words % 3), 1)
    with np.load(out / "model.npz") as npz:  # p1 absorbed everyone's last counts: the sum of all three
        np.testing.assert_allclose(npz["phi"], ((total + 0.01) / (total + 0.01).sum(axis=0)).T, rtol=1e-12)
    rows = [r for pid in ("p1", "p2", "p3") for r in read_history(out / "history" / f"{pid}.jsonl")]
    # a party stops once a party it reads has published its last round: the fastest wrote all 4 lines
    assert max(r["round"] for r in rows) == 4 and {r["algorithm"] for r in rows} == {"async-wordcount"}
    assert all(r["quality_name"] == "channels_read" for r in rows)
    assert json.loads((out / "topics.json").read_text())[0]["words"]
