"""`fedtopic demo` and `fedtopic simulate --transport chain`: DAFed-LDA over real channel contracts."""

from __future__ import annotations

import json

from fedtopic.cli.main import main
from fedtopic.runs.folder import SUMMARY_KEYS


def test_demo_trains_over_the_chain_and_compares_with_baselines(tmp_path, capsys):
    out = tmp_path / "demo"
    args = ["demo", "--dataset", "synthetic", "--parties", "3", "-k", "8", "--iterations", "6", "--out", str(out), "--format", "json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert all(k in report for k in SUMMARY_KEYS) and report["algorithm"] == "dafed-lda"
    assert set(report["comparison"]) == {"dafed-lda", "centralized-lda", "stand-alone"}
    # every party published its genesis and at least one round, each after rotating its channel key
    assert report["chain_transactions"] >= 3 * 3
    assert report["chain_calldata_bytes"] > report["bytes_sent"] > 0
    assert max(p["sweeps"] for p in report["parties_detail"]) == 6
    for name in ("summary.json", "topics.json", "comparison.png", "dafed/staleness.png", "centralized/perplexity.png"):
        assert (out / name).stat().st_size > 0


def test_simulate_over_the_chain_matches_the_board_format(tmp_path, capsys):
    out = tmp_path / "sim"
    args = ["simulate", "--dataset", "synthetic", "--parties", "2", "-k", "5", "--iterations", "3", "--transport", "chain",
            "--max-delay", "0", "--out", str(out), "--format", "json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["transport"] == "chain" and summary["chain_transactions"] > 0
    assert summary["bytes_received"] > 0


def test_simulate_rejects_unknown_transport(tmp_path, capsys):
    assert main(["simulate", "--transport", "carrier-pigeon", "--out", str(tmp_path / "x")]) == 2
    assert "unknown asynchronous link 'carrier-pigeon'; known: memory, chain" in capsys.readouterr().err


def test_simulate_from_a_fig5_consortium_config(tmp_path, capsys):
    from fedtopic.consortium.config import load_consortium, save_consortium
    from fedtopic.consortium.init import cp_from_consortia, init_consortium

    # paper Fig. 5: con1 = {p1, p2}, con2 = {p2, p3}, con4 = {p4, p5}
    init = init_consortium(5, tmp_path / "c", cp=cp_from_consortia([["p1", "p2"], ["p2", "p3"], ["p4", "p5"]]), seed=1)
    cfg = load_consortium(init.config_path)
    cfg = cfg.model_copy(update={
        "algorithm": cfg.algorithm.model_copy(update={"topics": 5, "iterations": 6, "random_delay": (0.0, 0.02)}),
        "data": cfg.data.model_copy(update={"dataset": "synthetic"}),
    })
    save_consortium(cfg, init.config_path)
    out = tmp_path / "sim"
    assert main(["simulate", "--config", str(init.config_path), "--out", str(out), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["parties"] == 5 and summary["topics"] == 5
    # a party reads only the channels CP grants it (Def. 4); a party may stop before its first round
    # when the fastest party it reads has already finished (paper §8.1 stop rule)
    read = {d["party"]: set(d["read_from"]) for d in summary["parties_detail"]}
    allowed = {"p1": {"p2"}, "p2": {"p1", "p3"}, "p3": {"p2"}, "p4": {"p5"}, "p5": {"p4"}}
    assert all(read[p] <= allowed[p] for p in allowed)
    assert any(read[p] == allowed[p] for p in ("p1", "p2", "p3")) and any(read[p] == allowed[p] for p in ("p4", "p5"))


def test_convergence_rule_stops_parties_early(tmp_path, capsys):
    out = tmp_path / "conv"
    args = ["simulate", "--dataset", "synthetic", "--parties", "2", "-k", "5", "--iterations", "50", "--max-delay", "0",
            "--opt", "converge_tol=0.99", "--out", str(out), "--format", "json"]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert {d["stopped_by"] for d in summary["parties_detail"]} <= {"converged", "fastest-party-finished"}
    assert "converged" in {d["stopped_by"] for d in summary["parties_detail"]}
    assert max(d["sweeps"] for d in summary["parties_detail"]) < 50
