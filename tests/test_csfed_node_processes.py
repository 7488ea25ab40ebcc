"""`fedtopic node run` for csfed-lda: three OS processes over the real aggregator; one is killed -9 and resumes.

The straggler deadline is long, so the round waits for the restarted party:
the result must still be exactly the lock-step simulation's (the restarted
node resubmits its persisted update, never a second version of a round).
"""

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
from _csfed_setup import lockstep_phi, make_consortium, model_phi

from fedtopic.simulation.aggregator_proc import AggregatorProcess

pytestmark = pytest.mark.xdist_group("agg-csfed_node_processes")
REPO = Path(__file__).resolve().parent.parent


def _node(config: Path, party: str, url: str, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "fedtopic.cli.main", "node", "run", "--config", str(config), "--party", party,
           "--url", url, "--format", "json", "--round-timeout", "240"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True, env=env)


def test_killed_csfed_node_resumes_and_the_model_equals_lockstep(tmp_path):
    config, cfg = make_consortium(tmp_path / "c", protection="none", iterations=8)
    procs: dict[str, subprocess.Popen] = {}
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        try:
            logs = {p: tmp_path / f"{p}.log" for p in cfg.party_ids}
            procs = {p: _node(config, p, agg.url, logs[p]) for p in cfg.party_ids}
            until = time.monotonic() + 180
            while "round 3/" not in logs["p2"].read_text():
                assert time.monotonic() < until, logs["p2"].read_text()[-2000:]
                assert procs["p2"].poll() is None, logs["p2"].read_text()[-2000:]
                time.sleep(0.05)
            os.kill(procs["p2"].pid, signal.SIGKILL)
            procs["p2"].wait(30)
            procs["p2"] = _node(config, "p2", agg.url, tmp_path / "p2-restart.log")
            outs = {p: proc.communicate(timeout=240)[0] for p, proc in procs.items()}
        finally:
            for proc in procs.values():
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait(30)
    for p, proc in procs.items():
        assert proc.returncode == 0, (tmp_path / f"{p}.log").read_text()[-2000:]
    assert "p2: resumed at round " in (tmp_path / "p2-restart.log").read_text()
    summaries = {p: json.loads(out) for p, out in outs.items()}
    ref = lockstep_phi(cfg)
    for p, s in summaries.items():
        assert s["algorithm"] == "csfed-lda" and s["sweeps"] == 8
        assert np.array_equal(model_phi(config, p), ref), p
        assert (config.parent / "state" / p / "model" / "theta.npy").is_file()
    # the restarted node's totals cover the whole run, not only what came after the restart
    assert summaries["p2"]["rounds"] == summaries["p1"]["rounds"] == 8  # after the genesis, round 0
    assert [r["round"] for r in summaries["p2"]["rounds_detail"]] == list(range(9))
    assert summaries["p2"]["bytes_sent"] > 0.5 * summaries["p1"]["bytes_sent"]
