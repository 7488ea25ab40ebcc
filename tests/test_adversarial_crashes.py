"""Crashes against real processes: nodes ride out an aggregator outage longer than the old retry budget. The soak
of seeded random kill -9s of the aggregator and of parties (every party ends with the Φ of a clean run) is
``benchmarks/bench_reliability.py``'s: its single kills are tested one by one where they happen (node and
aggregator resume tests)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from _csfed_setup import lockstep_phi, make_consortium, model_phi, run_parties

from fedtopic.simulation.aggregator_proc import AggregatorProcess

pytestmark = [pytest.mark.adversarial, pytest.mark.xdist_group("agg-adversarial_crashes")]


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

