"""Leftover state and new runs across real processes (issue 28 items 2 and 3): a finished session says so in
/status, a new run gets a new aggregator session without wiping anything, `--fresh` sets state aside (never
deletes it), a state folder of another run is refused in one line, and abandoning a session stops its waiters."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx
import pytest
from _csfed_setup import make_consortium
from _node_procs import node_process, run_node_processes

from fedtopic.consortium.config import save_consortium
from fedtopic.ledger.local_nodes import REPO_ROOT
from fedtopic.simulation.aggregator_proc import AggregatorProcess

pytestmark = pytest.mark.xdist_group("agg-consortium_runs")


def _status(url: str) -> dict[str, dict]:
    return {s["session_id"]: s for s in httpx.get(url + "/status").json()["sessions"]}


def _node(config, party, url, *extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fedtopic.cli.main", "node", "run", "--config", str(config),
                           "--party", party, "--url", url, *extra], capture_output=True, text=True, timeout=240,
                          env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})


def test_a_new_run_gets_a_new_session_and_leftover_state_is_named(tmp_path):
    config, cfg = make_consortium(tmp_path / "c", protection="none", iterations=2)
    logs = {p: tmp_path / f"{p}.log" for p in cfg.party_ids}
    state = config.parent / "state"
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        run_node_processes(config, cfg.party_ids, agg.url, logs)
        first = _status(agg.url)
        assert first and all(s["state"] == "finished" and s["missing"] == [] for s in first.values()), first
        assert all(seen["ended"] == "finished" for s in first.values() for seen in s["seen"])
        # the state moved away by hand (it gave "409 duplicate_update" before): the run is new, so is its session
        (state).rename(tmp_path / "moved-state")
        run_node_processes(config, cfg.party_ids, agg.url, logs)
        second = {sid: s for sid, s in _status(agg.url).items() if sid not in first}
        assert second and all("-r2-" in sid and s["state"] == "finished" for sid, s in second.items()), second
        # --fresh: the earlier state is set aside, renamed, never deleted, and a third session holds the new run
        run_node_processes(config, cfg.party_ids, agg.url, logs, extra=("--fresh",))
        assert sorted(p.name.split(".old-")[0] for p in state.glob("*.old-*")) == ["p1", "p2", "p3"]
        assert any("-r3-" in sid for sid in _status(agg.url))
        # the same state folder under another algorithm: one line naming what changed, nothing touched
        other = cfg.model_copy(update={"algorithm": cfg.algorithm.model_copy(update={"topics": 4})})
        save_consortium(other, config)
        refused = _node(config, "p1", agg.url)
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert refused.returncode == 2 and len(errors) == 1 and "Traceback" not in refused.stderr, refused.stderr
    assert "holds the state of another run (topics 5 → 4" in errors[0] and "--fresh" in errors[0]


def test_a_party_that_abandons_a_session_stops_the_ones_waiting_in_it(tmp_path):
    config, cfg = make_consortium(tmp_path / "c", protection="none", iterations=3)
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        # p1 and p2 start; p3 never comes: they wait in round 0
        waiting = {p: node_process(config, p, agg.url, tmp_path / f"{p}.log") for p in ("p1", "p2")}
        try:
            until = time.monotonic() + 120
            while "waits for p3" not in (tmp_path / "p2.log").read_text():
                assert time.monotonic() < until and waiting["p2"].poll() is None
                time.sleep(0.2)
            waiting["p1"].kill()
            waiting["p1"].wait(30)
            # a new run: p1 abandons the first session and waits in the next one, where p2 is not
            waiting["p1"] = node_process(config, "p1", agg.url, tmp_path / "p1-fresh.log", ("--fresh",))
            waiting["p2"].communicate(timeout=120)
            assert "p1: abandoned session" in (tmp_path / "p1-fresh.log").read_text()
        finally:
            for proc in waiting.values():
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(30)
        status = _status(agg.url)
    text = (tmp_path / "p2.log").read_text()
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert waiting["p2"].returncode == 2 and len(errors) == 1, text[-2000:]
    assert "p1 left session" in errors[0] and "--fresh" in errors[0]
    assert any(s["state"] == "abandoned" for s in status.values())


def test_sync_nodes_say_whom_they_went_on_without(tmp_path):
    """p3 never comes: after the consortium's straggler deadline every round goes on without it, and each node's
    summary and last line say so (the aggregator's /status names it as missing while it runs)."""
    config, cfg = make_consortium(tmp_path / "c", protection="none", deadline=2.0, iterations=2)
    logs = {p: tmp_path / f"{p}.log" for p in ("p1", "p2")}
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        procs = {p: node_process(config, p, agg.url, logs[p]) for p in logs}
        outs = {p: proc.communicate(timeout=240)[0] for p, proc in procs.items()}
        status = _status(agg.url)
    for p, out in outs.items():
        assert procs[p].returncode == 0, logs[p].read_text()[-2000:]
        summary = json.loads(out)
        assert summary["rounds_without"] == {"p3": summary["rounds"]} and summary["straggler_deadline_seconds"] == 2.0
    assert all(seen["last_round"] is None for s in status.values() for seen in s["seen"] if seen["party"] == "p3")
    assert all(s["state"] == "running" and "p3" in s["missing"] for s in status.values())  # p3 never finished
