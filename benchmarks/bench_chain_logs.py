"""`chain up`'s eth_getLogs: the log index against eth-tester's receipt scan (the anchor), side by side.

    python benchmarks/bench_chain_logs.py [--parties 3] [--rounds 60] [--words 2000] [--topics 20] [--json out.json]

An in-process ChainService served over HTTP on 127.0.0.1; a consortium of P parties publishes R rounds of dense
random word-topic counts (V × K, encrypted, chunked as DAFed does). Then, alternately and 3 times each, one
eth_getLogs over the whole chain through HTTP (the index) and the same filter answered by eth-tester's scan
(in-process, no HTTP): medians, MB of response per second, and the ratio. Also eth_blockNumber's latency while
a whole-chain eth_getLogs runs in another thread (fair serving), and a party's read of its peers' latest
rounds (and one publish) at round 10 and at the last round. Restarts and length: bench_chain_scale.py.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedtopic.crypto.keys import generate_party_keys  # noqa: E402
from fedtopic.ledger.channel import ChainChannel  # noqa: E402
from fedtopic.ledger.deploy import PartySpec, ensure_consortium, fund_accounts  # noqa: E402
from fedtopic.ledger.local_nodes import embedded_faucet_key  # noqa: E402
from fedtopic.ledger.rpc import Signer, connect  # noqa: E402
from fedtopic.ledger.server import ChainHTTPServer, ChainService, to_json_rpc  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parties", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--words", type=int, default=2000)
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        service = ChainService(Path(tmp) / "chain")
        server = ChainHTTPServer("127.0.0.1", 0, service)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        w3 = connect(server.url)
        admin = Signer(w3, embedded_faucet_key())
        ids = [f"p{i + 1}" for i in range(args.parties)]
        keys = {p: generate_party_keys(p, seed=b"bench-logs") for p in ids}
        fund_accounts(admin, [k.address for k in keys.values()])
        dep = ensure_consortium(admin, [PartySpec(p, k.address, k.x25519_public) for p, k in keys.items()],
                                {p: [q for q in ids if q != p] for p in ids})
        shape = (args.words, args.topics)
        channels = {p: ChainChannel(w3, dep.registry, k, shape=shape) for p, k in keys.items()}
        rng = np.random.default_rng(0)
        reader = channels[ids[0]]

        def read_time() -> float:
            times = []
            for _ in range(5):
                t0 = time.perf_counter()
                reader.read_latest()
                times.append(time.perf_counter() - t0)
            return statistics.median(times)

        read_at: dict[int, float] = {}
        publish_at: dict[int, float] = {}
        started = time.perf_counter()
        for r in range(args.rounds):
            for ch in channels.values():
                t0 = time.perf_counter()
                ch.publish(r, rng.integers(0, 50, size=shape).astype(np.int32))
                if r in (10, args.rounds - 1):
                    publish_at[r] = time.perf_counter() - t0
            if r in (10, args.rounds - 1):
                read_at[r] = read_time()
        publish_seconds = time.perf_counter() - started
        head = w3.eth.block_number
        addresses = [ch.channel for ch in channels.values()]
        flt = {"address": addresses, "fromBlock": "0x0", "toBlock": hex(head)}
        body = {"jsonrpc": "2.0", "id": 1, "method": "eth_getLogs", "params": [flt]}
        index_s, scan_s, size = [], [], 0
        with httpx.Client(timeout=600) as http:
            for _ in range(3):
                t = time.perf_counter()
                answer = http.post(server.url, json=body)
                index_s.append(time.perf_counter() - t)
                size = len(answer.content)
                t = time.perf_counter()
                with service._lock:
                    logs = to_json_rpc(service._call("eth_getLogs", [flt])["result"])
                json.dumps(logs)
                scan_s.append(time.perf_counter() - t)
            n_logs = len(answer.json()["result"])
            waits: list[float] = []
            long = threading.Thread(target=lambda: [http.post(server.url, json=body) for _ in range(3)])
            long.start()
            while long.is_alive():
                t = time.perf_counter()
                httpx.post(server.url, json={"jsonrpc": "2.0", "id": 2, "method": "eth_blockNumber", "params": []})
                waits.append(time.perf_counter() - t)
            long.join()
        server.shutdown()
        service.close()
        data_mb = sum(f.stat().st_size for f in (Path(tmp) / "chain").iterdir()) / 2**20
    mb = size / 2**20
    out = {"parties": args.parties, "rounds": args.rounds, "blocks": head, "logs": n_logs, "response_mb": mb,
           "index_seconds": statistics.median(index_s), "scan_seconds": statistics.median(scan_s),
           "index_mb_per_s": mb / statistics.median(index_s), "scan_mb_per_s": mb / statistics.median(scan_s),
           "speedup": statistics.median(scan_s) / statistics.median(index_s),
           "block_number_during_getlogs_median_ms": 1000 * statistics.median(waits),
           "block_number_during_getlogs_max_ms": 1000 * max(waits), "publish_seconds": publish_seconds,
           "read_latest_seconds_by_round": read_at, "publish_seconds_by_round": publish_at,
           "read_ratio_last_over_round_10": read_at[args.rounds - 1] / read_at[10],
           "chain_data_mb": data_mb}
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
