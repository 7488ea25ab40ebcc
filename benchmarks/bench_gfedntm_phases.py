"""Where a gFedNTM step through the aggregator spends its time: each phase's round, and both processes' CPU.

    python benchmarks/bench_gfedntm_phases.py [--nodes 5] [--docs 1280] [--vocabulary 5000] [--topics 50]
                                              [--protection none] [--wire float32]

One epoch of ``fedtopic simulate``'s gFedNTM (``bench_gfedntm.py``'s corpus and settings: synthetic LDA
documents, batch 64 per node, a real aggregator child on 127.0.0.1). Steps 2 to the second-to-last are timed
(the first steps load numba caches and open connections):

- per phase, medians over steps: ``compute``, from the previous phase's last aggregate out to this phase's last
  update in; ``in spread``, first to last node entering the exchange; ``round``, last node in to first
  aggregate out (the aggregator's share of the critical path); ``out spread``, first to last aggregate out
  (decoding, and nodes queueing for a compute slot). ``grad-dec``, which runs beside phases 4 and 5: how long
  a node waited for it when it asked;
- per step: wall time, the CPU time of the nodes' process and of the aggregator child (``/proc``), and the
  nodes' thread CPU split into compute (each ``NodeStep`` phase, Adam), HTTP (``_Flight.fly``), encode and
  decode.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_gfedntm import corpus_arguments, synthetic_consortium  # noqa: E402

from fedtopic.algorithms.registry import get_algorithm  # noqa: E402
from fedtopic.allocator import keep_freed_buffers  # noqa: E402
from fedtopic.neural import sync_opt  # noqa: E402
from fedtopic.node import sync_runtime  # noqa: E402
from fedtopic.node.channels import DenseChannel  # noqa: E402
from fedtopic.simulation.sync_run import simulate_sync  # noqa: E402

PHASES = ("enc", "dec", "gdec", "genc", "grad-enc")
COMPUTE = ("__init__", "sums_encoder", "sums_decoder", "grad_decoder_stats", "grad_encoder_stats", "gradient")


def process_cpu() -> tuple[float, float]:
    """(CPU seconds of this process, of its children: the aggregator) so far."""
    kids: list[str] = []
    for task in os.listdir("/proc/self/task"):
        try:
            kids += Path(f"/proc/self/task/{task}/children").read_text().split()
        except OSError:
            pass
    tick = os.sysconf("SC_CLK_TCK")
    child = 0.0
    for pid in kids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        child += (int(fields[11]) + int(fields[12])) / tick
    t = os.times()
    return t.user + t.system, child


class Probe:
    """Wraps the runtime's and the nodes' methods to time them between two steps."""

    def __init__(self, first: int, last: int) -> None:
        self.first, self.last = first, last
        self.events: list[tuple[str, int, float, float]] = []  # (channel, step, in, out) of every sum
        self.waits: list[float] = []
        self.cpu: collections.Counter[str] = collections.Counter()
        self.marks: dict[str, tuple[float, float, float]] = {}

    def timing(self) -> bool:
        return "a" in self.marks and "b" not in self.marks

    def install(self) -> None:
        probe, summed, result = self, sync_runtime._Exchange.sum, sync_runtime._Flight.result

        def timed_sum(ex, channel, seq, update):
            if channel == "enc" and seq == probe.first and "a" not in probe.marks:
                probe.marks["a"] = (*process_cpu(), time.perf_counter())
            t0 = time.perf_counter()
            out = summed(ex, channel, seq, update)
            probe.events.append((channel, seq, t0, time.perf_counter()))
            if channel == "grad-enc" and seq == probe.last and "b" not in probe.marks:
                probe.marks["b"] = (*process_cpu(), time.perf_counter())
            return out

        def timed_result(flight):
            t0 = time.perf_counter()
            out = result(flight)
            if flight.thread is not None and probe.timing():
                probe.waits.append(time.perf_counter() - t0)
            return out

        sync_runtime._Exchange.sum, sync_runtime._Flight.result = timed_sum, timed_result
        for cls, names, kind in ((sync_opt.NodeStep, COMPUTE, "compute"), (sync_opt.Adam, ("step",), "compute"),
                                 (sync_runtime._Flight, ("fly",), "HTTP"),
                                 (sync_runtime._Flight, ("_encode",), "encode")):
            for name in names:
                self._count(cls, name, kind)
        self._count(DenseChannel, "decode", "decode")

    def _count(self, cls, name: str, kind: str) -> None:
        inner, probe = getattr(cls, name), self

        def counted(*args, **kwargs):
            t0 = time.thread_time()
            out = inner(*args, **kwargs)
            if probe.timing():
                probe.cpu[kind] += time.thread_time() - t0
            return out

        setattr(cls, name, counted)


def main() -> None:
    keep_freed_buffers()  # as every `fedtopic` command does (the aggregator child is one)
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    corpus_arguments(ap)
    ap.add_argument("--protection", default="none", choices=("none", "mask"))
    ap.add_argument("--wire", default="float32", choices=("float32", "float64"), help="the gradient's precision")
    args = ap.parse_args()
    _, data = synthetic_consortium(args)
    steps = -(-(args.docs - args.docs // 4) // 64)  # a node's training share (three quarters), 64 of it a step
    if steps < 5:
        ap.error("--docs gives fewer than 5 steps an epoch; nothing left to time")
    probe = Probe(2, steps - 2)
    probe.install()
    spec = get_algorithm("gfedntm-prodlda").spec(args.topics, 1, args.seed,
                                                 {"batch": str(64 * args.nodes), "tolerance": "0",
                                                  "wire": args.wire})  # the union batch: 64 a node
    with tempfile.TemporaryDirectory() as tmp:
        simulate_sync(data, "gfedntm-prodlda", spec, Path(tmp) / "run", protection=args.protection,
                      say=lambda _: None)
    by: dict[tuple[str, int], list[tuple[float, float]]] = collections.defaultdict(list)
    for channel, seq, t_in, t_out in probe.events:
        by[(channel, seq)].append((t_in, t_out))
    rows: dict[str, dict[str, list[float]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    previous = max(t for _, t in by[("grad-enc", probe.first - 1)])
    for seq in range(probe.first, probe.last + 1):
        for phase in PHASES:
            ins, outs = [t for t, _ in by[(phase, seq)]], [t for _, t in by[(phase, seq)]]
            rows[phase]["compute"].append(max(ins) - previous)
            rows[phase]["in spread"].append(max(ins) - min(ins))
            rows[phase]["round"].append(min(outs) - max(ins))
            rows[phase]["out spread"].append(max(outs) - min(outs))
            previous = max(outs)
    n = probe.last - probe.first + 1
    (a_self, a_child, a_wall), (b_self, b_child, b_wall) = probe.marks["a"], probe.marks["b"]
    print(f"{args.nodes} nodes, V = {args.vocabulary:,}, K = {args.topics}, protection {args.protection}; steps "
          f"{probe.first}-{probe.last}, medians in ms\n")
    print("| phase | compute | in spread | round | out spread |\n|---|---:|---:|---:|---:|")
    for phase in PHASES:
        print(f"| {phase} | " + " | ".join(f"{1000 * statistics.median(v):.1f}" for v in rows[phase].values()) + " |")
    if probe.waits:
        print(f"\ngrad-dec: a node waited {1000 * statistics.median(probe.waits):.1f} ms (median) for it, "
              f"{1000 * max(probe.waits):.1f} at most")
    print(f"\nper step: wall {1000 * (b_wall - a_wall) / n:.1f} ms; CPU of the nodes' process "
          f"{1000 * (b_self - a_self) / n:.1f} ms, of the aggregator {1000 * (b_child - a_child) / n:.1f} ms; the "
          "nodes' threads: " + ", ".join(f"{kind} {1000 * v / n:.1f}" for kind, v in probe.cpu.most_common()))


if __name__ == "__main__":
    main()
