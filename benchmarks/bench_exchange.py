"""What one synchronous round costs through a real aggregator, with no model around it: latency and CPU.

    python benchmarks/bench_exchange.py [--parties 5] [--sizes 200 10000 770250] [--zeros 0.51]
                                        [--rounds 40] [--json out.json]

``--parties`` client threads of this process (one ``AggregatorClient`` each, as ``fedtopic simulate`` runs them)
and one ``fedtopic aggregator serve`` child on 127.0.0.1 with the consortium's real authentication and durable
store. One ``dense-sum`` session per size; every round, each party sends a float64 vector of that many values
(a fraction ``--zeros`` of them zero, so the bitmap form is taken as for gFedNTM's gradient: 770,250 values is
ProdLDA's W at V 5,000, K 50) with ``submit_and_fetch``, the one request a synchronous round takes. The parties
start each round together (a barrier), so a round's time is pure exchange: from the first request out to the
last aggregate in. Reported per size: median and fastest round, bytes up per party, and the CPU seconds per round
of the aggregator process and of this process (``/proc``), i.e. what the round costs the machine beyond the
wall time. gFedNTM's step is five such rounds in a chain (``neural.sync_opt``): four of 200 or 10,000 values and
one of the whole gradient.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedtopic.algorithms.registry import get_algorithm  # noqa: E402
from fedtopic.allocator import keep_freed_buffers  # noqa: E402
from fedtopic.consortium.init import key_file_path  # noqa: E402
from fedtopic.crypto.keys import load_party_keys  # noqa: E402
from fedtopic.network.client import AggregatorClient  # noqa: E402
from fedtopic.network.sparse import encode_array  # noqa: E402
from fedtopic.simulation.aggregator_proc import AggregatorProcess  # noqa: E402
from fedtopic.simulation.local_consortium import local_consortium  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def vectors(parties: int, size: int, zeros: float, seed: int) -> list[np.ndarray]:
    """One float64[size] update per party, a fraction ``zeros`` of each zero."""
    rng = np.random.default_rng([seed, size])
    out = []
    for _ in range(parties):
        v = rng.normal(size=size)
        v[rng.random(size) < zeros] = 0.0
        out.append(v)
    return out


def run_size(clients: list[AggregatorClient], ids: list[str], agg_pid: int, size: int, zeros: float, rounds: int,
             seed: int) -> dict[str, float]:
    """Open a dense-sum session of ``size`` values and time ``rounds`` rounds (the first two are warm-up)."""
    session = f"bench-{size}"
    for c in clients:
        c.session = session
        c.open_session(ids, combiner="dense-sum", meta={"shape": [size], "dtype": "float64"})
    payloads = [encode_array(v) for v in vectors(len(clients), size, zeros, seed)]
    spans = [[(0.0, 0.0)] * rounds for _ in clients]
    barrier = threading.Barrier(len(clients) + 1)
    cpu: list[tuple[float, float]] = []

    def party(i: int) -> None:
        for r in range(rounds):
            barrier.wait()
            t0 = time.perf_counter()
            clients[i].submit_and_fetch(r, payloads[i], 25.0)
            spans[i][r] = (t0, time.perf_counter())

    threads = [threading.Thread(target=party, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for r in range(rounds):
        if r == 2:
            cpu.append((cpu_seconds(agg_pid), cpu_seconds(os.getpid())))
        barrier.wait()
    for t in threads:
        t.join()
    cpu.append((cpu_seconds(agg_pid), cpu_seconds(os.getpid())))
    walls = [max(s[r][1] for s in spans) - min(s[r][0] for s in spans) for r in range(2, rounds)]
    timed = rounds - 2
    return {"values": size, "bytes_up": len(payloads[0]), "median_ms": 1e3 * statistics.median(walls),
            "fastest_ms": 1e3 * min(walls), "aggregator_cpu_ms": 1e3 * (cpu[1][0] - cpu[0][0]) / timed,
            "parties_cpu_ms": 1e3 * (cpu[1][1] - cpu[0][1]) / timed}


def main() -> None:
    keep_freed_buffers()  # as every `fedtopic` command does (the aggregator child is one)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parties", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="+", default=[200, 10_000, 770_250])
    ap.add_argument("--zeros", type=float, default=0.51, help="fraction of zero values in every update")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.rounds < 3:
        ap.error("--rounds must be at least 3 (two warm-up rounds)")

    spec = get_algorithm("gfedntm-prodlda").spec(10, 1, args.seed, {})
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-exchange-") as tmp:
        work = Path(tmp)
        config, cfg = local_consortium(work / "consortium", args.parties, spec, algorithm="gfedntm-prodlda",
                                       protection="none", seed=args.seed)
        ids = list(cfg.party_ids)
        with AggregatorProcess(config, work / "aggregator", work / "aggregator.log") as agg:
            clients = [AggregatorClient(agg.url, load_party_keys(key_file_path(config.parent, pid)), "bench")
                       for pid in ids]
            try:
                for size in args.sizes:
                    row = run_size(clients, ids, agg.proc.pid, size, args.zeros, args.rounds, args.seed)
                    rows.append(row)
                    print(f"{size:,} values: {row['median_ms']:.1f} ms a round", file=sys.stderr)
            finally:
                for c in clients:
                    c.close()

    print(f"\n{args.parties} parties, one thread each in this process; {args.rounds - 2} timed rounds per size "
          f"(median); {args.zeros:.0%} of each update zero\n")
    print("| values per update | bytes up per party | round, median ms | fastest ms | aggregator CPU ms / round "
          "| parties' CPU ms / round |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['values']:,} | {r['bytes_up']:,} | {r['median_ms']:.1f} | {r['fastest_ms']:.1f} | "
              f"{r['aggregator_cpu_ms']:.1f} | {r['parties_cpu_ms']:.1f} |")
    if args.json:
        args.json.write_text(json.dumps({"settings": {k: str(v) for k, v in vars(args).items()}, "results": rows},
                                        indent=2))


if __name__ == "__main__":
    main()
