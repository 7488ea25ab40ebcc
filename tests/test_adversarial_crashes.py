"""Crashes against real processes: nodes ride out an aggregator outage longer than the old retry budget, and a
bounded soak of seeded random kill -9s of the aggregator and of parties ends with every party holding the Φ of a
clean run, no round missing or doubled."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from _csfed_setup import lockstep_phi, make_consortium, model_phi, run_parties

from fedtopic.simulation.aggregator_proc import AggregatorProcess

pytestmark = [pytest.mark.adversarial, pytest.mark.xdist_group("agg-adversarial_crashes")]
REPO = Path(__file__).resolve().parent.parent


def test_nodes_survive_a_12_second_aggregator_outage(tmp_path):
    config, cfg = make_consortium(tmp_path / "c", protection="none", iterations=8)
    agg = AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log")
    reached = threading.Event()
    hook = {"p1": lambda rec: reached.set() if rec.round >= 3 else None}
    results: dict = {}
    runner = threading.Thread(target=lambda: results.update(run_parties(config, cfg, agg.url, fail=hook)))
    runner.start()
    try:
        assert reached.wait(120)
        port = agg.port
        agg.kill9()
        time.sleep(12.0)
        agg = AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg2.log", port=port)
        runner.join(300)
    finally:
        agg.stop()
    assert all(isinstance(r, dict) for r in results.values()), results
    ref = lockstep_phi(cfg)
    assert all(np.array_equal(model_phi(config, p), ref) for p in cfg.party_ids)


def _node(config: Path, party: str, url: str, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "fedtopic.cli.main", "node", "run", "--config", str(config), "--party", party,
           "--url", url, "--format", "json", "--round-timeout", "240"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(log, "a"), text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})


def test_soak_random_kills_of_the_aggregator_and_parties(tmp_path):
    """P = 3 parties × R = 12 rounds; 6 seeded kill -9s spread over the run (aggregator or a party)."""
    config, cfg = make_consortium(tmp_path / "c", protection="mask", iterations=12)
    rng = random.Random(20261123)
    agg = AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log")
    logs = {p: tmp_path / f"{p}.log" for p in cfg.party_ids}
    procs = {p: _node(config, p, agg.url, logs[p]) for p in cfg.party_ids}
    kills: list[str] = []
    try:
        deadline = time.monotonic() + 400
        for _ in range(6):
            time.sleep(rng.uniform(1.0, 3.0))
            if all(proc.poll() is not None for proc in procs.values()):
                break
            victim = rng.choice(["aggregator", *cfg.party_ids])
            kills.append(victim)
            if victim == "aggregator":
                port = agg.port
                agg.kill9()
                agg = AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log", port=port)
            elif procs[victim].poll() is None:
                os.kill(procs[victim].pid, signal.SIGKILL)
                procs[victim].wait(30)
                procs[victim] = _node(config, victim, agg.url, logs[victim])
        for p, proc in procs.items():
            proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            assert proc.returncode == 0, logs[p].read_text()[-3000:]
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(30)
        agg.stop()
    assert kills, "the soak killed nothing"
    ref = lockstep_phi(cfg)
    for p in cfg.party_ids:
        assert np.array_equal(model_phi(config, p), ref), (p, kills)
