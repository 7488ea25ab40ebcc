"""The aggregator store's per-round and per-request costs as a session grows: closing a round, recording a
request nonce, a party's latest update, and writing a large payload file.

    python benchmarks/bench_store.py [--rounds 4000] [--nonces 60000] [--repeats 40] [--json out.json]

Against ``Store`` and ``BlobDir`` directly in a temporary folder (real SQLite with ``synchronous=FULL``, real
files and fsyncs), one thread:

- ``close_round`` with a small inline aggregate and two updates, median ms per close over each block of 1,000
  rounds (a gFedNTM run closes five rounds a step, thousands an hour);
- ``record_nonce`` with ``--nonces`` nonces kept in the window (every signed request but an update records
  one; 60,000 is 100 requests a second over a 300 s window's two windows);
- ``last_updates`` of three parties after ``--rounds`` rounds (``/status``);
- ``BlobDir.put`` of 2 MB (a float32 gradient aggregate) as a new file, and right after ``drop`` of another
  (which keeps it as a spare to write over, where the checkout has spares).

Run it from two checkouts (``PYTHONPATH``) to compare them: every figure is absolute.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedtopic.network.blobs import BlobDir  # noqa: E402
from fedtopic.network.store import Store  # noqa: E402

SPEC = {"parties": ["p1", "p2", "p3"], "combiner": "dense-sum", "meta": {}, "params": {},
        "straggler_deadline_seconds": 30.0}


def median_ms(call: Callable[[int], object], n: int) -> float:
    times = []
    for i in range(n):
        t = time.perf_counter()
        call(i)
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def rounds(store: Store, count: int) -> dict[str, float]:
    """Median ms of a close per block of 1,000 rounds."""
    store.create_session("s", SPEC, "p1", 0.0)
    out: dict[str, float] = {}
    block: list[float] = []
    for n in range(count):
        for party in ("p1", "p2"):
            store.add_update("s", n, party, f"{n:064x}", b"u" * 64, now=float(n))
        t = time.perf_counter()
        store.close_round("s", n, float(n), "complete", b"a" * 1600, f"{n:064x}", ("p1", "p2"), ("p3",))
        block.append(time.perf_counter() - t)
        if len(block) == 1000 or n == count - 1:
            out[f"rounds {n + 1 - len(block)}-{n}"] = 1e3 * statistics.median(block)
            block = []
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=4000)
    ap.add_argument("--nonces", type=int, default=60_000)
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        store = Store(Path(tmp) / "store")
        results["close_round, ms"] = rounds(store, args.rounds)
        parties = ("s", ["p1", "p2", "p3"]) if "parties" in inspect.signature(store.last_updates).parameters \
            else ("s",)  # a checkout before a7d6123's successors reads every party's rows at once
        results["last_updates of 3 parties, ms"] = {
            f"after {args.rounds} rounds": median_ms(lambda _: store.last_updates(*parties), args.repeats)}
        now = 1_000.0
        for i in range(args.nonces):
            store.record_nonce(f"old-{i}", now + i * 300.0 / args.nonces, 300.0)
        at = now + 300.0
        results["record_nonce, ms"] = {f"{args.nonces} kept": median_ms(
            lambda i: store.record_nonce(f"new-{i}", at + i * 1e-3, 300.0), args.repeats)}
        blobs, data = BlobDir(Path(tmp) / "blobs"), os.urandom(2_000_000)
        new = median_ms(lambda i: blobs.put(f"s/new{i}", data), args.repeats)
        for i in range(args.repeats):
            (blobs.root / f"s/new{i}").unlink()
        blobs.put("s/r0", data)
        after_drop = []  # each put follows the drop of the previous file, as a round's close does
        for i in range(1, args.repeats + 1):
            blobs.drop([f"s/r{i - 1}"])
            after_drop.append(median_ms(lambda _, i=i: blobs.put(f"s/r{i}", data), 1))
        results["BlobDir.put of 2 MB, ms"] = {"new file": new, "after a drop": statistics.median(after_drop)}
        store.close()
    for name, figures in results.items():
        print(f"{name}: " + ", ".join(f"{k} {v:.3f}" for k, v in figures.items()))
    if args.json:
        args.json.write_text(json.dumps({"settings": {k: str(v) for k, v in vars(args).items()},
                                         "results": results}, indent=2))


if __name__ == "__main__":
    main()
