"""Ledger cost of one DAFed-LDA round at the CSFed/DAFed paper's scale: publish + read, per party.

P = 20 parties, V = 13,155, K = 40, 300 documents x ~20 tokens per party (6,000 tokens), CP = every
party reads every channel (one consortium). Counts: words Zipf(1.07)-distributed, topics uniform
(the round-0 state, the largest payload). One untimed warm-up round (deployment, first key
wrapping), then round 2 is timed: every party publishes N_p (encode → seal → chunk → transactions),
then every party reads the latest N_q of the 19 others (one eth_call + one eth_getLogs, unwrap,
open, decode). Reported: payload bytes on chain per party, gas, and seconds per party per round
(publish + read), on the embedded chain (in process) and over `fedtopic chain up` (HTTP, separate
process). The paper's DAFed-LDA spends 3.24 s per iteration on communication; target ≤ 0.3 s.

Run from the repository root:  PYTHONPATH=. python benchmarks/bench_ledger.py [--backend both]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from fedtopic.crypto.codec import encode_counts
from fedtopic.crypto.keys import generate_party_keys
from fedtopic.ledger.channel import ChainChannel
from fedtopic.ledger.deploy import PartySpec, ensure_consortium, fund_accounts
from fedtopic.ledger.embedded import EmbeddedChain
from fedtopic.ledger.local_nodes import start_chain_up
from fedtopic.ledger.rpc import Signer, connect


def party_counts(rng: np.random.Generator, v: int, k: int, docs: int, doc_len: int) -> np.ndarray:
    """N_p int32[V, K] of docs x doc_len tokens: Zipf(1.07) words, uniform topics."""
    p = 1.0 / np.arange(1, v + 1) ** 1.07
    words = rng.choice(v, size=docs * doc_len, p=p / p.sum())
    n = np.zeros((v, k), dtype=np.int32)
    np.add.at(n, (words, rng.integers(0, k, size=words.size)), 1)
    return n


def run_round(w3, faucet_key: bytes, args: argparse.Namespace) -> dict:
    rng = np.random.default_rng(args.seed)
    ids = [f"p{i}" for i in range(1, args.parties + 1)]
    keys = {p: generate_party_keys(p, seed=b"bench-ledger") for p in ids}
    admin = Signer(w3, faucet_key)
    fund_accounts(admin, [k.address for k in keys.values()])
    dep = ensure_consortium(admin, [PartySpec(p, k.address, k.x25519_public) for p, k in keys.items()],
                            {p: ids for p in ids})
    shape = (args.vocab, args.topics)
    chans = {p: ChainChannel(w3, dep.registry, k, shape=shape) for p, k in keys.items()}
    counts = {p: party_counts(rng, *shape, args.docs, args.doc_len) for p in ids}
    for p in ids:  # warm-up round 1: first key wrapping, caches
        chans[p].publish(1, counts[p])
    for p in ids:
        chans[p].read_latest()
    t0 = time.perf_counter()
    published = [chans[p].publish_bytes(2, encode_counts(counts[p]))
                 for p in ids]
    t1 = time.perf_counter()
    for p in ids:
        got = chans[p].read_latest()
        assert len(got) == args.parties - 1 and all(s.round == 2 for s in got)
    t2 = time.perf_counter()
    assert all(np.array_equal(s.n_wk, counts[s.party]) for s in chans[ids[0]].read_latest())
    return {
        "parties": args.parties, "V": args.vocab, "K": args.topics, "tokens_per_party": args.docs * args.doc_len,
        "payload_bytes_per_party": int(np.mean([x.payload_bytes for x in published])),
        "chunks_per_party": max(x.n_chunks for x in published),
        "gas_per_party": int(np.mean([x.gas_used for x in published])),
        "publish_s_per_party": (t1 - t0) / args.parties,
        "read_s_per_party": (t2 - t1) / args.parties,
        "total_s_per_party_per_round": (t2 - t0) / args.parties,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=["embedded", "chain_up", "both"], default="both")
    ap.add_argument("--parties", type=int, default=20)
    ap.add_argument("--vocab", type=int, default=13_155)
    ap.add_argument("--topics", type=int, default=40)
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--doc-len", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    results = {}
    if args.backend in ("embedded", "both"):
        chain = EmbeddedChain()
        results["embedded"] = run_round(chain.web3(), chain.faucet_key, args)
    if args.backend in ("chain_up", "both"):
        node = start_chain_up()
        try:
            results["chain_up"] = run_round(connect(node.url), node.faucet_key, args)
        finally:
            node.stop()
    print(json.dumps(results, indent=1))
    print("\n| backend | payload bytes/party | chunks | gas/party | publish s/party | read s/party | total s/party/round |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['payload_bytes_per_party']:,} | {r['chunks_per_party']} | {r['gas_per_party']:,} | "
              f"{r['publish_s_per_party']:.3f} | {r['read_s_per_party']:.3f} | {r['total_s_per_party_per_round']:.3f} |")


if __name__ == "__main__":
    main()
