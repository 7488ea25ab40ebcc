"""A plain chain read behind hostile callers: how long `eth_blockNumber` waits while H clients keep sending batches
of ten 1e9-gas `eth_call` loops (`0x5b600056`, JUMPDEST PUSH1 0 JUMP: forever, until a cap) to `chain up`.

Reported: the median and 90th percentile of the read's wall time over --samples reads spaced 0.2 s apart, and how
many hostile calls were answered (run to their cap, yielded, or refused past the batch budget). Target (issue
"Organisations that don't trust each other", item 8): median ≤ 0.5 s.

Run from the repository root:  PYTHONPATH=. python benchmarks/bench_chain_reads.py [--hostile 3] [--samples 40]
(to compare with an earlier checkout, run the same command from that checkout with PYTHONPATH set to it)
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time

import httpx

from fedtopic.ledger.local_nodes import start_chain_up

LOOP = {"data": "0x5b600056", "gas": hex(10**9)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hostile", type=int, default=3, help="hostile clients, each sending batches in a loop")
    parser.add_argument("--samples", type=int, default=40, help="plain reads timed")
    args = parser.parse_args()
    chain = start_chain_up()
    stop = threading.Event()
    answered = {"calls": 0}

    def hostile() -> None:
        with httpx.Client(timeout=120) as client:
            batch = [{"jsonrpc": "2.0", "id": i, "method": "eth_call", "params": [LOOP, "latest"]} for i in range(10)]
            while not stop.is_set():
                try:
                    answered["calls"] += len(client.post(chain.url, json=batch).json())
                except httpx.HTTPError:  # the chain stopped under it at the end
                    return

    threads = [threading.Thread(target=hostile, daemon=True) for _ in range(args.hostile)]
    try:
        for t in threads:
            t.start()
        time.sleep(1.0)  # the hostile calls hold the chain now
        started = time.monotonic()
        waits = []
        with httpx.Client(timeout=120) as reader:
            for _ in range(args.samples):
                t0 = time.perf_counter()
                answer = reader.post(chain.url, json={"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber"}).json()
                waits.append(time.perf_counter() - t0)
                assert answer["result"].startswith("0x"), answer
                time.sleep(0.2)
        stop.set()
        for t in threads:  # their batches end within the batch budget
            t.join(60)
    finally:
        stop.set()
        chain.stop()
    waits.sort()
    print(json.dumps({"hostile_clients": args.hostile, "samples": args.samples,
                      "read_median_s": round(statistics.median(waits), 3),
                      "read_p90_s": round(waits[int(0.9 * (len(waits) - 1))], 3),
                      "read_max_s": round(waits[-1], 3), "hostile_calls_answered": answered["calls"],
                      "took_s": round(time.monotonic() - started, 1)}))


if __name__ == "__main__":
    main()
