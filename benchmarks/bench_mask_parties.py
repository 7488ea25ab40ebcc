"""What one party's ``mask`` costs per round as the consortium grows, at a fixed V × K.

    python benchmarks/bench_mask_parties.py --parties 100 200 1000 [--cells 140000] [--rounds 3] [--dropped 0.1]

Side by side in one run:
- encode on the session's neighbour graph (``mask_degree`` = ``mask_graph.default_degree``, 64 at 1,000) and
  on the complete graph (every pair: P − 1 keystreams, Bonawitz et al.);
- decode of an aggregate of every party, and of one that lost a ``--dropped`` share of them (telescoped self
  masks: 2·runs + 1 keystreams), against independent self masks (one keystream per contributor, what every
  party computed before).

Party 0 of P with real X25519 keys; the first round fills the cached pair secrets (as every round after a
node's first does), then the median of ``--rounds`` rounds is reported. Pin it (``taskset -c 1``) for figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import struct
import time

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from fedtopic.crypto.bitpack import pack_bits
from fedtopic.crypto.protect.base import AGGREGATE_MAGIC, ProtectionContext, pack_header
from fedtopic.crypto.protect.mask import MASK, _dtype, _Keystreams, _self_key, mask_bits
from fedtopic.crypto.protect.mask_graph import default_degree

TOPICS = 10
MAX_VALUE = 511


def _decode_seconds(ctx: ProtectionContext, contributors: list[int], bits: int) -> float:
    """Seconds ``decode_aggregate`` takes on an aggregate of ``contributors`` (its value is irrelevant to the cost;
    the zero aggregate fails the final sum check)."""
    shape = ctx.shape
    words = np.zeros(shape[0] * shape[1], dtype=_dtype(bits))
    body = struct.pack("<H", len(contributors)) + struct.pack(f"<{len(contributors)}H", *contributors) + \
        pack_bits(words, bits)
    blob = pack_header(AGGREGATE_MAGIC, "mask", len(contributors), ctx.round, shape, "bench") + body
    t0 = time.perf_counter()
    try:
        MASK.decode_aggregate(blob, ctx)
    except Exception:  # noqa: BLE001 - the zero aggregate is not a sum of masked counts
        pass
    return time.perf_counter() - t0


def measure(parties: int, cells: int, rounds: int, dropped: float, seed: int = 0) -> dict:
    """Median encode and decode seconds of party 0 in a ``parties``-party session of ``cells`` cells."""
    rng = np.random.default_rng(seed)
    keys = [X25519PrivateKey.from_private_bytes(rng.bytes(32)) for _ in range(parties)]
    publics = tuple(k.public_key().public_bytes_raw() for k in keys)
    shape = (cells // TOPICS, TOPICS)
    graph = ProtectionContext(session="bench", round=0, shape=shape, n_parties=parties, party_index=0,
                              max_value=MAX_VALUE, delta=0.0, x25519_private=keys[0].private_bytes_raw(),
                              party_publics=publics, mask_secret=rng.bytes(32))
    complete = dataclasses.replace(graph, mask_degree=parties - 1)
    counts = rng.integers(0, 3, shape)
    MASK.encode_update(counts, complete)  # fills the X25519 cache
    bits = mask_bits(parties, MAX_VALUE)
    lost = max(1, round(dropped * parties))
    survivors = sorted(int(i) for i in rng.choice(np.arange(1, parties), parties - lost, replace=False))
    survivors = [0] + survivors[1:]
    times: dict[str, list[float]] = {k: [] for k in ("encode_graph", "encode_complete", "decode_all",
                                                     "decode_dropped", "decode_independent")}
    for r in range(1, rounds + 1):
        for name, ctx in (("encode_graph", graph), ("encode_complete", complete)):
            at = dataclasses.replace(ctx, round=r)
            t0 = time.perf_counter()
            MASK.encode_update(counts, at)
            times[name].append(time.perf_counter() - t0)
        at = dataclasses.replace(graph, round=r)
        times["decode_all"].append(_decode_seconds(at, list(range(parties)), bits))
        times["decode_dropped"].append(_decode_seconds(at, survivors, bits))
        streams = _Keystreams(shape[0] * shape[1], bits)
        total = np.zeros(shape[0] * shape[1], dtype=_dtype(bits))
        t0 = time.perf_counter()
        for i in range(parties):  # the anchor: one independent self mask per contributor
            total -= streams(_self_key(at, i))
        times["decode_independent"].append(time.perf_counter() - t0)
    return {"parties": parties, "cells": shape[0] * shape[1], "bits": bits, "degree": default_degree(parties),
            "dropped": parties - len(survivors)} | {k: round(statistics.median(v), 4) for k, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parties", type=int, nargs="+", default=[100, 200, 1000])
    ap.add_argument("--cells", type=int, default=140_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dropped", type=float, default=0.1, help="share of parties missing from the second decode")
    args = ap.parse_args(argv)
    for p in args.parties:
        print(json.dumps(measure(p, args.cells, args.rounds, args.dropped)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
