"""`fedtopic demo` and `fedtopic simulate --transport chain`: DAFed-LDA over real channel contracts."""

from __future__ import annotations

import json

from fedtopic.cli.main import main
from fedtopic.node.run_folder import SUMMARY_KEYS


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
    assert "unknown --transport" in capsys.readouterr().err
