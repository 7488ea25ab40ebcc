"""A Ray cluster of two "machines" (issue 47): two Linux network namespaces joined by veth pairs to one bridge,
`ray start --head` in one and `ray start --address` in the other, each node told its own address (never the
machine's interface). `simulate --engine ray --address HEAD:6379 --aggregator-host HEAD`, run in the head's
namespace, places parties on both nodes, whose actors reach the aggregator over the bridge, and trains the threads
engine's model bit for bit. Skips, saying why, where namespaces or Ray are missing. Every Ray process started here
is stopped by its PID."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys

import numpy as np
import pytest
from _netns import available, machines
from _ray_procs import ray_pids, stop_by_pid
from _texts import theme_texts, write_jsonl

from fedtopic.cli.main import main
from fedtopic.ledger.local_nodes import REPO_ROOT

pytest.importorskip("ray", reason="NOT RUN: Ray is not installed (scripts/test installs fedtopic[cluster])")
pytestmark = [pytest.mark.xdist_group("node-processes"),
              pytest.mark.skipif(available() is not None, reason=f"NOT RUN: {available()}")]
RAY = [sys.executable, "-m", "ray.scripts.scripts"]


@pytest.mark.timeout(600)
def test_simulate_on_a_two_node_ray_cluster_places_parties_on_both_and_trains_the_threads_model(tmp_path, capsys):
    corpus = write_jsonl(tmp_path / "d.jsonl", theme_texts(160, seed=5))
    sim = ["simulate", "--algorithm", "csfed-lda", "--corpus", str(corpus), "--parties", "4", "-k", "3",
           "--iterations", "4", "--protection", "mask", "--seed", "3", "--format", "json"]
    assert main([*sim, "--out", str(tmp_path / "threads")]) == 0
    capsys.readouterr()
    marker = f"/tmp/ftray{secrets.token_hex(4)}"
    env = {"PYTHONPATH": str(REPO_ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    with machines(["head", "worker"]) as net:
        head, worker = net.addresses["head"], net.addresses["worker"]
        try:
            for machine, args in (("head", ["--head", "--port", "6379", "--include-dashboard=false"]),
                                  ("worker", ["--address", f"{head}:6379"])):
                started = subprocess.run(
                    net.command(machine, [*RAY, "start", *args, "--node-ip-address", net.addresses[machine],
                                          "--num-cpus", "1", "--disable-usage-stats", "--temp-dir", marker]),
                    capture_output=True, text=True, env=env, timeout=180)
                assert started.returncode == 0, started.stderr[-2000:]
            # without --aggregator-host the parties on the worker could not reach it: refused at once (issue 64)
            refused = subprocess.run(
                net.command("head", [sys.executable, "-m", "fedtopic.cli.main", *sim, "--engine", "ray",
                                     "--address", f"{head}:6379", "--out", str(tmp_path / "refused")]),
                capture_output=True, text=True, env=env, timeout=120)
            said = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
            assert refused.returncode == 2 and len(said) == 1, refused.stderr[-2000:]
            assert worker in said[0] and f"--aggregator-host {head}" in said[0], said
            run = subprocess.run(
                net.command("head", [sys.executable, "-m", "fedtopic.cli.main", *sim, "--engine", "ray",
                                     "--address", f"{head}:6379", "--aggregator-host", head,
                                     "--out", str(tmp_path / "ray")]),
                capture_output=True, text=True, env=env, timeout=400)
            assert run.returncode == 0, run.stderr[-3000:]
        finally:
            stop_by_pid(marker)
    assert not ray_pids(marker)
    summary = json.loads((tmp_path / "ray" / "summary.json").read_text())
    with np.load(tmp_path / "threads" / "model.npz") as a, np.load(tmp_path / "ray" / "model.npz") as b:
        np.testing.assert_array_equal(a["phi"], b["phi"])  # the same model, bit for bit
    nodes = {p["ray_node"] for p in summary["placement"].values()}
    assert len(nodes) == 2, summary["placement"]  # parties on both machines
    assert f"aggregator https://{head}:" in run.stderr and worker not in run.stderr  # on the head, pinned HTTPS
