"""CSFed-LDA end to end: the real aggregator subprocess, 3 parties over HTTP, every protection's numbers.

Protection does not change the sum, so with the same seeds every party's Φ_Σ
must equal the in-memory lock-step simulation's exactly (same sweeps, same
frozen counts, same RNG streams; the integer sums are exact).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from _csfed_setup import lockstep_phi, make_consortium, model_phi, run_parties

from fedtopic.consortium.init import key_file_path
from fedtopic.crypto.keys import load_party_keys
from fedtopic.network.client import AggregatorClient
from fedtopic.node.party_data import load_party_data
from fedtopic.node.session_names import default_session
from fedtopic.node.sync_node import run_sync_node
from fedtopic.simulation.aggregator_proc import AggregatorProcess

pytestmark = pytest.mark.xdist_group("agg-csfed_aggregator")


@pytest.mark.parametrize("protection", ["none", "paillier-iphe"])
def test_three_parties_match_the_lockstep_simulation(tmp_path, protection):
    config, cfg = make_consortium(tmp_path / "c", protection=protection, steps=2)
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        out = run_parties(config, cfg, agg.url)
    failed = {p: v for p, v in out.items() if isinstance(v, BaseException)}
    assert not failed, failed
    ref = lockstep_phi(cfg)
    for pid in cfg.party_ids:
        assert np.array_equal(model_phi(config, pid), ref), pid
        summary = out[pid]
        assert summary["sweeps"] == cfg.algorithm.iterations and summary["rounds"] == 3  # 3 × 2 sweeps after the genesis
        assert summary["protection"] == protection and summary["perplexity"] > 1
        assert all(r["contributors"] == list(cfg.party_ids) for r in summary["rounds_detail"])
    if protection == "paillier-iphe":  # every update carried ciphertexts (the top δ·V rows, dense)
        assert out["p1"]["bytes_sent"] > 4 * 256 * cfg.algorithm.topics


def test_mask_party_drops_out_recovery_gives_the_survivors_sum_and_it_resumes(tmp_path):
    config, cfg = make_consortium(tmp_path / "c", protection="mask", deadline=4.0)
    tokens = {pid: load_party_data(cfg, pid).train.n_tokens for pid in cfg.party_ids}

    class Crash(Exception):
        pass

    def crash_after_round_1(rec):
        if rec.round == 1:  # p3 has trained for round 2 and checkpointed, then dies before sending its update
            raise Crash

    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        import threading

        first: dict = {}
        crashed = threading.Thread(target=lambda: first.update(run_parties(config, cfg, agg.url,
                                                                           fail={"p3": crash_after_round_1})))
        crashed.start()
        keys = load_party_keys(key_file_path(config.parent, "p1"))
        watcher = AggregatorClient(agg.url, keys, f"{default_session(cfg)}-counts")
        until = time.monotonic() + 120
        while time.monotonic() < until:  # wait until round 2 closed without p3 (deadline, then recovery)
            try:
                if watcher.round(2).state == "closed":
                    break
            except Exception:  # noqa: BLE001 - the round does not exist yet
                pass
            time.sleep(0.2)
        info = watcher.round(2)
        assert info.state == "closed" and info.dropped == ["p3"] and info.close_reason == "deadline"
        resumed = run_sync_node(cfg, config, "p3", url=agg.url, say=lambda _: None, round_timeout=120.0)
        crashed.join(300)
        watcher.close()
    assert isinstance(first["p3"], Crash)
    survivors = {p: first[p] for p in ("p1", "p2")}
    for pid, summary in survivors.items():
        assert not isinstance(summary, BaseException), summary
        round2 = summary["rounds_detail"][2]
        assert round2["contributors"] == ["p1", "p2"] and round2["recovery_sent"]
        assert round2["aggregate_tokens"] == tokens["p1"] + tokens["p2"]  # the exact sum of the survivors
        assert summary["recoveries_sent"] >= 1
    assert np.array_equal(model_phi(config, "p1"), model_phi(config, "p2"))
    assert 2 in resumed["rounds_without_this_party"]  # p3 resumed, found round 2 closed, read it and went on
    assert resumed["sweeps"] == cfg.algorithm.iterations
    by_round = {r["round"]: r for r in resumed["rounds_detail"]}
    assert {0, 1, 2} <= set(by_round)  # the rounds before the crash still count in the resumed summary
    assert by_round[2]["aggregate_tokens"] == tokens["p1"] + tokens["p2"]
