"""2-thread speed-up of our sampler: 1- and 2-thread sweeps timed alternately on the same corpus.

    python benchmarks/bench_threads.py [--topics 50 200 1000] [--samplers auto] [--sweeps 10]

Same synthetic corpus as bench_sampler.py (≈2M tokens, V=5000, α=50/K, β=0.01). Two states
from the same seed are swept in turn, one with threads=1 and one with threads=2, so both see
the same load; after 3 warm-up sweeps the medians of the timed sweeps give the speed-up.
Needs two otherwise idle cores to mean anything.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_sampler import BETA, synthetic_corpus  # noqa: E402

from fedtopic.models.gibbs import resolve_sampler, sweep  # noqa: E402
from fedtopic.models.state import init_state  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topics", type=int, nargs="+", default=[50, 200, 1000])
    ap.add_argument("--samplers", nargs="+", default=["auto"], choices=["auto", "dense", "mh", "sparse"],
                    help="samplers to time at every K (default auto: dense below K 1000, mh from there)")
    ap.add_argument("--sweeps", type=int, default=10, help="timed sweeps per thread count (after 3 warm-up)")
    args = ap.parse_args(argv)
    corpus = synthetic_corpus(10_000, 200, 5000, 100, seed=7)
    n = len(corpus.words)
    for k in args.topics:
        for sampler in dict.fromkeys(resolve_sampler(name, k) for name in args.samplers):
            states = {t: init_state(corpus.words, corpus.doc_ptr, len(corpus.vocab), k, seed=1) for t in (1, 2)}
            times: dict[int, list[float]] = {1: [], 2: []}
            for i in range(3 + args.sweeps):
                for t in (1, 2):
                    t0 = time.perf_counter()
                    sweep(states[t], corpus.words, corpus.doc_ptr, 50.0 / k, BETA, sampler=sampler, threads=t)
                    if i >= 3:
                        times[t].append(time.perf_counter() - t0)
            one, two = statistics.median(times[1]), statistics.median(times[2])
            print(f"K={k:5d} {sampler:6s} 1 thread {n / one / 1e6:6.2f} Mtok/s | 2 threads {n / two / 1e6:6.2f} "
                  f"Mtok/s | speed-up {one / two:4.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
