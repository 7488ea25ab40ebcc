"""The dashboard's data layer without a browser: incremental history reading, liveness, the board's panels over a
run folder written by the real history writer, labels, and the static report's inlined data."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
from _dashboard_runs import history_line, run_folder

from fedtopic.dashboard.board import Board, compact
from fedtopic.dashboard.liveness import STOP_MIN_SECONDS, judge
from fedtopic.dashboard.report import render_report
from fedtopic.dashboard.sources import RunFolder, Sign, Signs, open_source
from fedtopic.dashboard.tail import HistoryTail
from fedtopic.errors import ConfigError
from fedtopic.runs.history import HistoryWriter


def test_tail_reads_only_what_was_appended_and_waits_for_a_tornhistory_line(tmp_path):
    path = tmp_path / "h.jsonl"
    tail = HistoryTail(path)
    assert tail.poll() == []
    w = HistoryWriter(path)
    w.append(history_line("p1", 0))
    w.append(history_line("p1", 1))
    assert [r["round"] for r in tail.poll()] == [0, 1]
    assert tail.poll() == []
    with open(path, "a") as fh:  # a write in progress
        fh.write(history_line("p1", 2).to_json()[:30])
    assert tail.poll() == []
    with open(path, "a") as fh:
        fh.write(history_line("p1", 2).to_json()[30:] + "\n")
    assert [r["round"] for r in tail.poll()] == [2]
    HistoryWriter(path, resumed=True).append(history_line("p1", 1))  # a redone round replaces the earlier line
    assert tail.poll()[0]["resumed"] is True and sorted(tail.rows) == [0, 1, 2] and tail.rows[1]["resumed"]
    path.unlink()
    HistoryWriter(path).append(history_line("p1", 0))  # replaced: read again from the start
    assert [r["round"] for r in tail.poll()] == [0] and sorted(tail.rows) == [0] and tail.generation == 1


@pytest.mark.parametrize("case, expected", [
    (dict(finished=True, process_alive=False), "finished"),
    (dict(process_alive=False), "stopped"),
    (dict(process_alive=None, last_sign=-(STOP_MIN_SECONDS + 1)), "stopped"),
    (dict(process_alive=True, last_sign=-600.0), "alive"),  # a live process that computes for long is not stopped
    (dict(process_alive=None, last_sign=-1.0, round=5, leader=30), "behind"),
    (dict(process_alive=None, last_sign=-7.0, heartbeat=True), "stopped"),
    (dict(process_alive=None, last_sign=-20.0, interval=10.0), "alive"),  # slow rounds: 4 × 10 s of patience
])
def test_liveness_rules(case, expected):
    args = dict(now=0.0, last_sign=-0.5, interval=None, round=None, leader=None, finished=False, process_alive=None,
                heartbeat=False) | case
    assert judge(**args).status == expected


def test_board_panels_over_arun_folder(tmp_path):
    run, phi = run_folder(tmp_path)
    board = Board(RunFolder(run))
    state = board.state()
    assert state["run"]["algorithm"] == "csfed-lda" and state["run"]["protection"] == "mask"
    assert "only the sum" in state["run"]["sees"]
    assert [p["party"] for p in state["parties"]] == ["p1", "p2"]
    assert all(p["status"] == "alive" and p["round"] == 11 for p in state["parties"])  # this process runs it
    assert state["parties"][0]["bytes_up"] == 1200
    hist = board.history()
    assert len(hist["rows"]["p1"]) == 12 and hist["cursors"] == {"p1": 12, "p2": 12}
    assert board.history({"p1": 12, "p2": 10})["rows"] == {"p1": [], "p2": hist["rows"]["p2"][10:]}
    topics = board.topics()
    assert topics["party"] == "p1" and [t["id"] for t in topics["topics"]] == [0, 1, 2]
    assert topics["topics"][0]["words"][0] == f"w{int(np.argmax(phi[0]))}"
    assert len(topics["map"]) == 3 and topics["parties"] == ["p1", "p2"]
    assert board.set_label(1, "  sport   news ") == {"1": "sport news"}
    assert json.loads((run / "topic-labels.json").read_text()) == {"1": "sport news"}
    assert (run / "topic-labels.json").stat().st_mode & 0o077 == 0  # private, whatever the umask
    with pytest.raises(ValueError, match="no topic has id 7 on this board"):
        board.set_label(7, "a topic that does not exist")
    assert board.topics()["labels"] == {"1": "sport news"}
    with pytest.raises(ValueError):
        board.set_label(1, "x" * 81)
    assert board.set_label(1, "") == {}
    for _ in range(2):  # a round redone after a restart counts once in the totals (its lines both reach the page)
        HistoryWriter(run / "history" / "p1.jsonl", resumed=True).append(history_line("p1", 11))
    board.refresh(force=True)
    assert board.state()["parties"][0]["bytes_up"] == 1200 and len(board.history()["rows"]["p1"]) == 14


class _Told(RunFolder):
    """A run folder plus a remote service's answer: p3 known only from it, p1 also from its own history."""

    def __init__(self, path, told):
        super().__init__(path)
        self.told = told

    def meta(self):
        return super().meta() | {"party_ids": ["p1", "p2", "p3"]}

    def signs(self):
        return Signs(parties={pid: Sign(round=r, last_sign=time.time()) for pid, r in self.told.items()})


@pytest.mark.parametrize("told, p3", [
    ({"p1": 5, "p3": 4}, ("alive", 1)),  # the answer lags the histories (round 29): p3 keeps up with that answer
    ({"p1": 20, "p3": 4}, ("behind", 16)),  # 16 rounds behind a party in the same answer
    ({"p1": 600, "p3": 598}, ("alive", 2)),  # the service counts other rounds (gFedNTM's steps): p1's history
])  # is compared with histories only, so its 29 epochs are not 571 rounds behind
def test_a_reported_round_is_compared_with_the_same_report(tmp_path, told, p3):
    run, _ = run_folder(tmp_path, rounds=30)
    parties = {p["party"]: p for p in Board(_Told(run, told)).state()["parties"]}
    assert (parties["p3"]["status"], parties["p3"]["rounds_behind"]) == p3
    assert parties["p3"]["why"] == ("16 rounds behind by the aggregator's figures" if p3[0] == "behind" else "")
    assert parties["p1"]["round"] == 29 and parties["p1"]["status"] == "alive"
    assert (parties["p1"]["round_source"], parties["p3"]["round_source"]) == ("history", "aggregator")


class _ChainTold(_Told):
    """The same, the answer a chain's (DAFed: its rounds are the parties' publications, the runtime's rounds)."""

    def meta(self):
        return super().meta() | {"mode": "async"}


def test_a_chains_rounds_count_against_the_histories(tmp_path):
    run, _ = run_folder(tmp_path, rounds=30)
    parties = {p["party"]: p for p in Board(_ChainTold(run, {"p1": 60, "p3": 58})).state()["parties"]}
    assert (parties["p1"]["status"], parties["p1"]["rounds_behind"]) == ("behind", 31)
    assert parties["p3"]["round_source"] == "chain"


def test_a_party_is_awaited_only_by_a_round_that_has_begun(tmp_path):
    """gFedNTM's sessions: the validation sum's round between epochs lists everyone as missing, and must not make
    every row read "the round waits for it"; a begun round does, for the members it lacks."""
    from fedtopic.crypto.codec import encode_counts
    from fedtopic.dashboard.sources import signs_from_status
    from fedtopic.network.schemas import SessionCreate
    from fedtopic.network.service import Aggregator
    from fedtopic.network.store import Store

    ids = ["p1", "p2", "p3"]
    agg = Aggregator(Store(tmp_path), {p: f"0x{i:040x}" for i, p in enumerate(ids, start=1)}, protection="none",
                     default_deadline=30.0)
    for sid in ("run-val", "run-enc"):
        agg.open_session(SessionCreate(session_id=sid, parties=ids, combiner="none", meta={"shape": [2, 2]}), "p1")
    signs, live = signs_from_status(agg.status(), ids)
    assert live == 2 and not any(sign.awaited for sign in signs.values())
    agg.submit("run-enc", 0, "p2", encode_counts(np.ones((2, 2), dtype=np.int64)))
    signs, _ = signs_from_status(agg.status(), ids)
    assert {pid: sign.awaited for pid, sign in signs.items()} == {"p1": True, "p2": False, "p3": True}
    assert signs["p2"].round is None and signs["p1"].round is None  # p2's round 0 is not done: the round is open


def test_a_party_waiting_in_the_open_round_shows_the_round_it_finished(tmp_path):
    """A history counts a round once its aggregate is taken: the aggregator's figure for a party whose update is in
    the open round 1 is 0, as the page of a party waiting beside it shows (it said "1 (aggregator)" against "0")."""
    from fedtopic.crypto.codec import encode_counts
    from fedtopic.dashboard.sources import signs_from_status
    from fedtopic.network.schemas import SessionCreate
    from fedtopic.network.service import Aggregator
    from fedtopic.network.store import Store

    ids = ["p1", "p2", "p3"]
    agg = Aggregator(Store(tmp_path), {p: f"0x{i:040x}" for i, p in enumerate(ids, start=1)}, protection="none",
                     default_deadline=30.0)
    agg.open_session(SessionCreate(session_id="run-enc", parties=ids, combiner="none", meta={"shape": [2, 2]}), "p1")
    update = encode_counts(np.ones((2, 2), dtype=np.int64))
    for pid in ids:
        agg.submit("run-enc", 0, pid, update)
    assert {pid: s.round for pid, s in signs_from_status(agg.status(), ids)[0].items()} == {p: 0 for p in ids}
    agg.submit("run-enc", 1, "p3", update)
    signs, _ = signs_from_status(agg.status(), ids)
    assert {pid: s.round for pid, s in signs.items()} == {p: 0 for p in ids}
    assert {pid: s.awaited for pid, s in signs.items()} == {"p1": True, "p2": True, "p3": False}


def test_a_new_run_in_the_same_folder_replaces_the_old_rows(tmp_path):
    run, _ = run_folder(tmp_path)
    board = Board(RunFolder(run))
    assert len(board.history()["rows"]["p1"]) == 12
    (run / "history" / "p1.jsonl").rename(run / "history" / "old.txt")
    HistoryWriter(run / "history" / "p1.jsonl").append(history_line("p1", 0))
    board.refresh(force=True)
    assert [r["r"] for r in board.history()["rows"]["p1"]] == [0]


def test_a_run_whose_process_died_shows_stopped(tmp_path):
    run, _ = run_folder(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "import os; print(os.getpid())"], stdout=subprocess.PIPE, text=True)
    pid = int(dead.communicate()[0])
    info = json.loads((run / "run-info.json").read_text())
    (run / "run-info.json").write_text(json.dumps(info | {"pid": pid}))
    state = Board(RunFolder(run)).state()
    assert state["run"]["state"] == "stopped"
    assert {p["status"] for p in state["parties"]} == {"stopped"}


def test_compact_rows_keep_what_the_panels_need():
    row = json.loads(history_line("p1", 3, epsilon=0.5, staleness={"p2": 2, "p3": 4},
                           extra={"ledger": {"block": 9, "gas": 21000}}).to_json())
    assert compact(row, frozenset({"p1", "p2"})) == {"r": 3, "t": row["time"], "c": 0.1, "x": 0.0, "w": 0.05,
                                                     "u": 100, "d": 200, "q": row["quality"], "e": 0.5, "s": 4,
                                                     "ledger": {"block": 9, "gas": 21000}}
    assert compact(row, frozenset({"p1", "p2", "p3"}))["in"] == ["p1", "p2"]


def test_report_inlines_everything_and_escapes_script_ends(tmp_path):
    run, _ = run_folder(tmp_path)
    Board(RunFolder(run)).set_label(0, "</script><b>x</b>")
    html = render_report(Board(RunFolder(run)))
    assert "window.FEDTOPIC_REPORT" in html and 'src="static/' not in html and 'href="static/' not in html
    assert "</script><b>" not in html  # the label cannot end the data script
    data = re.search(r"window\.FEDTOPIC_REPORT = (.*?);</script>", html, re.S).group(1)
    parsed = json.loads(data)
    assert parsed["topics"]["labels"] == {"0": "</script><b>x</b>"} and len(parsed["rows"]["p1"]) == 12
    assert not re.search(r"https?://", html.replace("http://www.w3.org/2000/svg", ""))  # nothing to fetch


def test_sources_refuse_what_they_cannot_show(tmp_path):
    with pytest.raises(ConfigError, match="not a folder"):
        open_source(tmp_path / "missing")
    with pytest.raises(ConfigError, match="holds no run"):
        open_source(tmp_path)
    (tmp_path / "c.toml").write_text("")
    with pytest.raises(ConfigError, match="--party"):
        open_source(tmp_path / "c.toml")
    os.makedirs(tmp_path / "r" / "history")
    with pytest.raises(ConfigError, match="consortium.toml"):
        open_source(tmp_path / "r", party="p1")


def test_a_finished_run_shows_its_final_model_not_its_last_snapshot(tmp_path, capsys):
    """A DAFed run of 15 rounds snapshots its topics at round 10; the finished run's panel is the model of
    `fedtopic topics`, labelled the final model (issue "Outputs that tell the truth", item 1)."""
    from fedtopic.cli.main import main
    from fedtopic.dashboard.board import Board
    from fedtopic.dashboard.sources import RunFolder

    out = tmp_path / "run"
    assert main(["simulate", "--algorithm", "dafed-lda", "--dataset", "synthetic", "--parties", "3", "-k", "4",
                 "--iterations", "15", "--max-delay", "0", "--out", str(out), "--format", "json"]) == 0
    capsys.readouterr()
    board = Board(RunFolder(out))
    try:
        panel = board.topics()
    finally:
        board.close()
    model_words = [t["words"][:5] for t in json.loads((out / "topics.json").read_text())]
    assert panel["round"] in (None, -1)  # the page says "final model"
    assert sorted(r["words"][:5] for r in panel["topics"]) == sorted(model_words)


def test_the_topic_map_is_drawn_from_the_whole_phi():
    """The map comes from Φ itself (principal coordinates of its Jensen–Shannon distances, what pyLDAvis draws),
    not from the words a page lists, and at least as faithful to Φ's distances as the map of the listed words."""
    from scipy.stats import spearmanr

    from fedtopic.dashboard.board import _candidate_phi, _topic_panel, _TopicIds
    from fedtopic.eval.topic_view import jensen_shannon, topic_map
    from fedtopic.runs.topic_snapshot import build_snapshot

    rng = np.random.default_rng(4)
    themes = rng.dirichlet(np.full(400, 0.05), size=4)  # four themes of three topics each (sport, money, …)
    phi = np.array([0.6 * themes[k // 3] + 0.4 * rng.dirichlet(np.full(400, 0.05)) for k in range(12)])
    phi[7] = 0.95 * phi[3] + 0.05 * rng.dirichlet(np.full(400, 0.05))  # topic 7 is nearly topic 3
    snap = build_snapshot(phi, None, [f"w{i}" for i in range(400)], party="p1", algorithm="x", round=5)
    panel = _topic_panel("p1", snap, _TopicIds())
    drawn = np.asarray(panel["map"])
    np.testing.assert_allclose(drawn, topic_map(phi), atol=1e-4)
    js = np.sqrt(jensen_shannon(phi))
    upper = np.triu_indices(12, 1)
    on_map = np.linalg.norm(drawn[:, None] - drawn[None, :], axis=2)
    words_only = topic_map(_candidate_phi(snap["topics"]))  # how the map was drawn before: from listed words
    before = np.linalg.norm(words_only[:, None] - words_only[None, :], axis=2)
    faithful = spearmanr(js[upper], on_map[upper]).statistic
    assert faithful > 0.5 and faithful >= spearmanr(js[upper], before[upper]).statistic


class _AsyncView(_Told):
    """A DAFed party's view: p1's own history, p2 and p3 as the chain told them (round, when first seen there)."""

    def __init__(self, path, told):
        super().__init__(path, {})
        self.told_at = told

    def meta(self):
        return super().meta() | {"mode": "async", "rounds": 30, "setup_rounds": 0, "finished": False}

    def histories(self):
        return {"p1": self.path / "history" / "p1.jsonl"}

    def party_process_alive(self, party):
        return None

    def signs(self):
        return Signs(parties={pid: Sign(round=r, last_sign=t) for pid, (r, t) in self.told_at.items()})


def test_a_party_killed_before_an_async_run_ended_is_stopped_not_finished(tmp_path):
    """Issue 66 item 1: once the fastest party has published its last round, a party silent since then ended with
    the run (finished), but one that fell silent long before (killed) is stopped, as it was before the run ended."""
    run, _ = run_folder(tmp_path, rounds=30)  # p1's history reaches round 29, the last: the run is over now
    now = time.time()
    view = _AsyncView(run, {"p2": (29, now - 1.0), "p3": (11, now - 600.0)})
    parties = {p["party"]: p for p in Board(view).state()["parties"]}
    assert parties["p2"]["status"] in ("alive", "finished")
    assert parties["p3"]["status"] == "stopped" and "before the run ended" in parties["p3"]["why"], parties["p3"]
    later = _AsyncView(run, {"p2": (29, now - 60.0), "p3": (11, now - 600.0)})  # p2 ended with the run, 60 s ago
    for row in Board(later).state()["parties"]:
        if row["party"] == "p2":
            assert (row["status"], row["why"]) == ("finished", "silent since the run ended")


def test_a_party_page_follows_the_consortium_config_into_the_next_run(tmp_path):
    """Issue 66 item 1: a page open since run 1 kept run 1's round total ("round 182 / 150") once the consortium
    changed its iterations and started run 2 with --fresh; a config caught mid-edit keeps what was read before."""
    from _csfed_setup import make_consortium

    from fedtopic.consortium.config import save_consortium
    from fedtopic.dashboard.sources import PartyView

    config, cfg = make_consortium(tmp_path, protection="none", iterations=150)
    view = PartyView(config, "p1", url="http://127.0.0.1:9")  # nobody listens: the others' note says so
    try:
        assert view.meta()["iterations"] == 150
        first_rounds = view.meta()["rounds"]
        save_consortium(cfg.model_copy(update={"algorithm": cfg.algorithm.model_copy(update={"iterations": 200})}),
                        config)
        meta = view.meta()
        assert meta["iterations"] == 200 and meta["rounds"] > first_rounds
        config.write_text(config.read_text(encoding="utf-8") + "\n[algorithm\n", encoding="utf-8")  # mid-edit
        assert view.meta()["iterations"] == 200
    finally:
        view.close()
