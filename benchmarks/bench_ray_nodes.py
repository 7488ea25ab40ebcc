"""Ray workloads on one node and on two nodes, each node a network namespace pinned to its own core (issue 47).

    python benchmarks/bench_ray_nodes.py [--repeats 3] [--parties 100] [--json out.json]      # as root

Two "machines" are Linux network namespaces joined by a bridge (tests/_netns.py, as the cross-machine tests make
them); every Ray node is started with ``--num-cpus 1`` under ``taskset`` on a core of its own, so a second node
brings a second core over a real network hop (veth), as a second machine would. One node: the head alone on core
0. Two nodes: the head on core 0 and a worker on core 1. The command (and, for ``simulate``, its aggregator) runs
in the head's namespace on core 0 in both cases. Workloads, timed whole (the cluster is up before):

* ``fedtopic simulate --algorithm csfed-lda --dataset bbc-news --parties P -k 10 --iterations 20 --engine ray``
* ``fedtopic experiment fednmf-tables --quick --engine ray`` (the k grid as Ray tasks)
* ``fedtopic experiment parties --quick --iterations 200 --engine ray`` (CSFed's Fig. 6: 20 trainings as Ray tasks)

After an untimed warm-up the two configurations alternate within each repeat; medians and the ratio one node / two
nodes are printed. Needs root, iproute2 and Ray (``fedtopic[cluster]``); says why and exits 2 otherwise. Every Ray
process is stopped by its PID.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _netns import available, machines  # noqa: E402
from _ray_procs import ray_pids, stop_by_pid  # noqa: E402

RAY = [sys.executable, "-m", "ray.scripts.scripts"]
CORES = {"head": "0", "worker": "1"}


def _pinned(net, machine: str, argv: list[str]) -> list[str]:
    return ["taskset", "-c", CORES[machine], *net.command(machine, argv)]


def _workloads(head: str, parties: int, out: Path) -> dict[str, list[str]]:
    cli = [sys.executable, "-m", "fedtopic.cli.main"]
    ray = ["--engine", "ray", "--address", f"{head}:6379"]
    return {
        f"csfed-lda, {parties} parties": [*cli, "simulate", "--algorithm", "csfed-lda", "--dataset", "bbc-news",
                                          "--parties", str(parties), "-k", "10", "--iterations", "20", *ray,
                                          "--aggregator-host", head, "--out", str(out / "csfed"), "--overwrite"],
        "fednmf-tables --quick": [*cli, "experiment", "fednmf-tables", "--quick", *ray, "--out", str(out / "fednmf"),
                                  "--overwrite"],
        "parties --quick, 200 sweeps": [*cli, "experiment", "parties", "--quick", "--iterations", "200", *ray,
                                         "--out", str(out / "parties"), "--overwrite"],
    }


def _one_configuration(n_nodes: int, parties: int, env: dict[str, str], out: Path,
                       only: list[str] | None = None) -> dict[str, float]:
    """Wall seconds of every workload on a fresh cluster of ``n_nodes`` one-core nodes."""
    marker = f"/tmp/ftbench{secrets.token_hex(4)}"
    names = ["head", "worker"][:n_nodes]
    with machines(["head", "worker"]) as net:
        head = net.addresses["head"]
        try:
            for machine in names:
                where = ["--head", "--port", "6379", "--include-dashboard=false"] if machine == "head" else \
                    ["--address", f"{head}:6379"]
                started = subprocess.run(
                    _pinned(net, machine, [*RAY, "start", *where, "--node-ip-address", net.addresses[machine],
                                           "--num-cpus", "1", "--disable-usage-stats", "--temp-dir", marker]),
                    capture_output=True, text=True, env=env, timeout=180)
                if started.returncode != 0:
                    raise SystemExit(f"ray start on {machine} failed: {started.stderr.strip()[-500:]}")
            seconds = {}
            for name, argv in _workloads(head, parties, out).items():
                if only and not any(part in name for part in only):
                    continue
                began = time.perf_counter()
                run = subprocess.run(_pinned(net, "head", argv), capture_output=True, text=True, env=env, timeout=1800)
                seconds[name] = time.perf_counter() - began
                if run.returncode != 0:
                    raise SystemExit(f"{name} on {n_nodes} node(s) failed: {run.stderr.strip()[-800:]}")
            return seconds
        finally:
            stop_by_pid(marker)
            if ray_pids(marker):
                raise SystemExit(f"Ray processes of {marker} outlived their stop")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--parties", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=1, help="untimed repeats first (numba's cache, the dataset's)")
    ap.add_argument("--only", nargs="+", default=None, help="the workloads whose names contain one of these words")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    why = available()
    if why is not None:
        print(f"bench_ray_nodes: cannot run here: {why}", file=sys.stderr)
        return 2
    if (os.cpu_count() or 1) < 2:
        print("bench_ray_nodes: needs two cores (one a node)", file=sys.stderr)
        return 2
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    times: dict[int, dict[str, list[float]]] = {1: {}, 2: {}}
    with tempfile.TemporaryDirectory(prefix="ftraybench") as tmp:
        for repeat in range(-args.warmup, args.repeats):
            for n_nodes in (1, 2):
                for name, s in _one_configuration(n_nodes, args.parties, env, Path(tmp), args.only).items():
                    if repeat >= 0:
                        times[n_nodes].setdefault(name, []).append(s)
                    print(f"{'warm-up' if repeat < 0 else f'repeat {repeat + 1}'}: {name:28s} {n_nodes} node(s) "
                          f"{s:7.1f} s", flush=True)
    rows = []
    for name in times[1]:
        one, two = statistics.median(times[1][name]), statistics.median(times[2][name])
        rows.append({"workload": name, "one_node_s": times[1][name], "two_nodes_s": times[2][name],
                     "median_one": one, "median_two": two, "speedup": one / two})
        print(f"{name:28s} one node {one:7.1f} s | two nodes {two:7.1f} s | {one / two:4.2f}x")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
