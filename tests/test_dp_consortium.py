"""Differential privacy inside the consortium: a DP party's releases (deterministic per round, unbiased, within
its budget), the dp options in consortium.toml and --opt, and CSFed/DAFed node processes with DP on through the
real aggregator (mask protection, one party killed -9 and resumed) and the real chain."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from _csfed_setup import make_consortium

from fedtopic.algorithms.lda.dp_party import DPLDAParty, count_release, release_mask
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.config import load_consortium, save_consortium
from fedtopic.consortium.init import init_consortium
from fedtopic.corpus.synthetic import generate_synthetic
from fedtopic.crypto.keys import generate_party_keys
from fedtopic.errors import ConfigError
from fedtopic.ledger.local_nodes import ANVIL_BINARY, start_chain_up
from fedtopic.node.party_setup import load_own_keys, prepare_party
from fedtopic.privacy.rdp import privacy_report_mixed
from fedtopic.simulation.aggregator_proc import AggregatorProcess

REPO = Path(__file__).resolve().parent.parent
DP_TABLE = "dp = { noise_multiplier = 2.0, sampling_rate = 0.5, epsilon_budget = 7.0 }\n"


@pytest.fixture(scope="module")
def corpus():
    return generate_synthetic(n_parties=1, n_topics=4, n_shared=2, n_words=300, docs_per_party=60, doc_length=40,
                              seed=2).parties[0]


def _party(corpus, secret=None, **options):
    algo = get_algorithm("dafed-lda")
    spec = algo.spec(4, 30, seed=3, options={"dp.noise_multiplier": "2", **options})
    return algo.channel_party("p1", 0, corpus, spec, secret=secret)


def test_release_is_the_same_however_often_asked_and_after_a_resume(corpus):
    party = _party(corpus)
    first = party.genesis()
    assert isinstance(party, DPLDAParty) and np.array_equal(first, party.own_counts())
    assert not np.array_equal(first, party.model.state.n_wk)  # noised, not the counts
    report = party.train_round([])
    twin = _party(corpus)
    twin.genesis()
    twin.resume(party.model.state, round=party.round, sweeps=party.sweeps)
    assert np.array_equal(twin.own_counts(), report.n_wk)


def test_a_peer_who_knows_the_seed_but_not_the_secret_cannot_regenerate_the_release(corpus):
    keys = generate_party_keys("p1", seed=b"dp-secret-test")
    mine, again = _party(corpus, keys.noise_secret), _party(corpus, keys.noise_secret)
    peer = _party(corpus, generate_party_keys("p2", seed=b"dp-secret-test").noise_secret)
    public = _party(corpus)  # what everyone holding the config can build
    release = mine.genesis()
    assert np.array_equal(release, again.genesis())  # the owner (e.g. after a restart) gets it back
    for other in (peer, public):
        other.genesis()
        assert np.array_equal(other.model.state.n_wk, mine.model.state.n_wk)  # same state ...
        assert not np.array_equal(other.own_counts(), release)  # ... but another release


def test_a_node_keys_its_party_with_its_noise_secret(tmp_path):
    config, _ = make_consortium(tmp_path, protection="none", iterations=4)
    _with_dp_table(config)
    cfg = load_consortium(config)
    prepared = prepare_party(cfg, config, "p1")
    assert prepared.party.party._secret == (int.from_bytes(prepared.keys.noise_secret, "big"),)
    assert prepared.keys.noise_secret != load_own_keys(cfg, config, "p2").noise_secret


def test_release_is_an_unbiased_noisy_subsampled_count():
    rng = np.random.default_rng(0)
    words, z = rng.integers(0, 20, 5000).astype(np.int32), rng.integers(0, 3, 5000).astype(np.int32)
    exact = np.zeros((20, 3))
    np.add.at(exact, (words, z), 1)
    ptr = np.arange(0, 5001, 50, dtype=np.int64)

    def once(s):
        rng = np.random.default_rng(s)
        return count_release(words, z, release_mask(ptr, 0.5, "token", 0, rng), (20, 3), 0.5, 2.0, rng)

    draws = np.stack([once(s) for s in range(300)])
    assert np.abs(draws.mean(axis=0) - exact).max() < 3.0  # exact cells are ~80; (noise σ 4 + subsampling)/√300
    assert draws.std(axis=0).mean() > 4.0  # the noise is there


def test_document_unit_keeps_whole_documents_and_caps_their_tokens():
    ptr = np.array([0, 3, 50, 51, 300, 420], dtype=np.int64)
    kept_docs = []
    for s in range(400):
        keep = release_mask(ptr, 0.5, "document", 10, np.random.default_rng(s))
        per_doc = np.add.reduceat(keep, ptr[:-1])
        assert np.all(per_doc <= np.minimum(np.diff(ptr), 10))
        assert set(per_doc[per_doc > 0]) <= {3, 10, 1}  # a kept document gives min(length, 10) tokens
        kept_docs.append(per_doc > 0)
    assert np.mean(kept_docs) == pytest.approx(0.5, abs=0.05)


def test_budget_bounds_the_rounds_and_the_summary_is_the_accountants(corpus):
    party = _party(corpus, **{"dp.epsilon_budget": "3", "dp.sampling_rate": "0.3"})
    limit = party.max_rounds()
    assert limit is not None and 0 < limit < 30 and party.max_sweeps(30) == limit
    assert privacy_report_mixed([(0.3, 2.0, limit + 1)], 1e-5).epsilon <= 3.0
    assert privacy_report_mixed([(0.3, 2.0, limit + 2)], 1e-5).epsilon > 3.0


def test_dp_options_spellings():
    algo = get_algorithm("csfed-lda")
    assert algo.spec(4, 3, options={"dp.noise_multiplier": "2"}).options["dp"] is True
    assert algo.spec(4, 3).options["dp"] is False
    with pytest.raises(ConfigError, match="dp = false"):
        algo.spec(4, 3, options={"dp": "false", "dp.noise_multiplier": "2"})
    with pytest.raises(ConfigError, match="spent before the first"):
        algo.spec(4, 3, options={"dp.noise_multiplier": "0.5", "dp.epsilon_budget": "0.01"})
    with pytest.raises(ConfigError, match="sampling_rate"):
        algo.spec(4, 3, options={"dp.sampling_rate": "0"})


def _with_dp_table(config: Path) -> None:
    text = config.read_text()
    config.write_text(text.replace("[algorithm.options]\n", "[algorithm.options]\n" + DP_TABLE, 1))


def _node(config: Path, party: str, log: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "fedtopic.cli.main", "node", "run", "--config", str(config), "--party", party,
           "--format", "json", *extra]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True, env=env)


def _finish(procs: dict[str, subprocess.Popen], logs: dict[str, Path]) -> dict[str, dict]:
    outs = {p: proc.communicate(timeout=300)[0] for p, proc in procs.items()}
    for p, proc in procs.items():
        assert proc.returncode == 0, logs[p].read_text()[-2000:]
    return {p: json.loads(out) for p, out in outs.items()}


def _stop(procs: dict[str, subprocess.Popen]) -> None:
    for proc in procs.values():
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)


@pytest.mark.xdist_group("agg-dp_consortium")
def test_csfed_nodes_with_dp_and_mask_through_the_aggregator(tmp_path):
    config, _ = make_consortium(tmp_path / "c", protection="mask", iterations=40)
    _with_dp_table(config)
    cfg = load_consortium(config)
    assert cfg.algorithm.options["dp.epsilon_budget"] == 7.0
    logs = {p: tmp_path / f"{p}.log" for p in cfg.party_ids}
    procs: dict[str, subprocess.Popen] = {}
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        try:
            procs = {p: _node(config, p, logs[p], "--url", agg.url, "--round-timeout", "240") for p in cfg.party_ids}
            until = time.monotonic() + 180
            while "round 3/" not in logs["p2"].read_text():
                assert time.monotonic() < until and procs["p2"].poll() is None, logs["p2"].read_text()[-2000:]
                time.sleep(0.05)
            os.kill(procs["p2"].pid, signal.SIGKILL)  # its releases must come back the same after the resume
            procs["p2"].wait(30)
            logs["p2"] = tmp_path / "p2-restart.log"
            procs["p2"] = _node(config, "p2", logs["p2"], "--url", agg.url, "--round-timeout", "240")
            summaries = _finish(procs, logs)
        finally:
            _stop(procs)
    assert "p2: resumed at round " in logs["p2"].read_text()
    assert "ε spent" in logs["p1"].read_text()  # shown live, round by round
    for s in summaries.values():
        p = s["privacy"]
        count, freq = p["releases"]
        assert freq == {"sampling_rate": 1.0, "noise_multiplier": 2.0, "count": 1}  # the setup's word frequencies
        assert count["sampling_rate"] == 0.5 and 1 < count["count"] <= 41
        assert p["epsilon"] <= 7.0
        expect = privacy_report_mixed([(0.5, 2.0, count["count"]), (1.0, 2.0, 1)], 1e-5).epsilon
        assert p["epsilon"] == pytest.approx(expect, rel=1e-12)
        assert privacy_report_mixed([(0.5, 2.0, count["count"] + 1), (1.0, 2.0, 1)], 1e-5).epsilon > 7.0
        assert s["sweeps"] == count["count"] - 1 < 40  # the budget, not the iterations, ended it
        assert s["perplexity"] > 1


@pytest.mark.xdist_group("node-processes")
@pytest.mark.parametrize("engine", ["embedded", "anvil"])
def test_dafed_nodes_with_dp_over_the_chain(tmp_path, capsys, engine):
    from fedtopic.cli.main import main

    if engine == "anvil" and not ANVIL_BINARY.exists():
        pytest.skip("anvil is installed by `npm install` in contracts/ (scripts/test does it)")
    init = init_consortium(3, tmp_path / "c", seed=7)
    cfg = load_consortium(init.config_path)
    algorithm = cfg.algorithm.model_copy(update={"topics": 5, "iterations": 30})
    save_consortium(cfg.model_copy(update={"algorithm": algorithm,
                                           "data": cfg.data.model_copy(update={"dataset": "synthetic"})}),
                    init.config_path)
    _with_dp_table(init.config_path)
    chain = start_chain_up(engine=engine)
    procs: dict[str, subprocess.Popen] = {}
    try:
        assert main(["consortium", "deploy", str(init.config_path), "--rpc", chain.url, *chain.faucet_args]) == 0
        logs = {p: tmp_path / f"{p}.log" for p in ("p1", "p2", "p3")}
        procs = {p: _node(init.config_path, p, logs[p], "--genesis-timeout", "240") for p in logs}
        summaries = _finish(procs, logs)
    finally:
        _stop(procs)
        chain.stop()
    for s in summaries.values():
        p = s["privacy"]
        (count,) = p["releases"]
        assert p["epsilon"] <= 7.0 and count["count"] == s["rounds"] + 1
        assert p["epsilon"] == pytest.approx(privacy_report_mixed([(0.5, 2.0, count["count"])], 1e-5).epsilon,
                                             rel=1e-12)
    assert max(s["sweeps"] for s in summaries.values()) < 30  # stopped by the budget
    assert "ε spent" in logs["p1"].read_text()


@pytest.mark.xdist_group("agg-dp_consortium")
def test_simulate_csfed_with_document_level_dp(tmp_path, capsys):
    from fedtopic.cli.main import main

    assert main(["simulate", "--algorithm", "csfed-lda", "--dataset", "synthetic", "--parties", "3", "-k", "4",
                 "--iterations", "4", "--protection", "none", "--opt", "dp.unit=document", "--opt",
                 "dp.max_doc_tokens=20", "--opt", "dp.noise_multiplier=1.5", "--out", str(tmp_path / "run"),
                 "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    for p in summary["privacy"].values():
        assert p["unit"] == "document (≤ 20 tokens counted)"
        assert p["epsilon"] == pytest.approx(
            privacy_report_mixed([(0.5, 1.5, 5), (1.0, 1.5, 1)], 1e-5).epsilon, rel=1e-12)


@pytest.mark.xdist_group("agg-dp_consortium")
def test_dp_releases_combine_with_mask_protection(tmp_path, capsys):
    from fedtopic.cli.main import main

    phis = []
    for protection in ("none", "mask"):
        out = tmp_path / protection
        assert main(["simulate", "--algorithm", "csfed-lda", "--dataset", "synthetic", "--parties", "3", "-k", "4",
                     "--iterations", "4", "--protection", protection, "--opt", "dp.noise_multiplier=2",
                     "--out", str(out), "--format", "json"]) == 0
        capsys.readouterr()
        phis.append(np.load(out / "model.npz")["phi"])
    assert np.array_equal(phis[0], phis[1])
