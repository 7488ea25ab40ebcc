"""What one party's ``mask`` costs per round as the consortium grows: encode (P − 1 pairwise keystreams and its
own self mask) and decode (every contributor's self mask), at a fixed V × K.

    python benchmarks/bench_mask_parties.py --parties 100 200 1000 [--cells 140000] [--rounds 3]

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
from fedtopic.crypto.protect.mask import MASK, mask_bits

TOPICS = 10
MAX_VALUE = 511


def measure(parties: int, cells: int, rounds: int, seed: int = 0) -> dict:
    """Median encode and decode seconds of party 0 in a ``parties``-party session of ``cells`` cells."""
    rng = np.random.default_rng(seed)
    keys = [X25519PrivateKey.from_private_bytes(rng.bytes(32)) for _ in range(parties)]
    publics = tuple(k.public_key().public_bytes_raw() for k in keys)
    shape = (cells // TOPICS, TOPICS)
    ctx = ProtectionContext(session="bench", round=0, shape=shape, n_parties=parties, party_index=0,
                            max_value=MAX_VALUE, delta=0.0, x25519_private=keys[0].private_bytes_raw(),
                            party_publics=publics, mask_secret=rng.bytes(32))
    counts = rng.integers(0, 3, shape)
    MASK.encode_update(counts, ctx)  # fills the X25519 cache
    bits = mask_bits(parties, MAX_VALUE)
    words = np.zeros(shape[0] * shape[1], dtype=np.uint16 if bits <= 16 else np.uint32)
    encode, decode = [], []
    for r in range(1, rounds + 1):
        at = dataclasses.replace(ctx, round=r)
        t0 = time.perf_counter()
        MASK.encode_update(counts, at)
        encode.append(time.perf_counter() - t0)
        # an aggregate of every party (its value is irrelevant to the cost; decoding it fails the sum check)
        body = struct.pack("<H", parties) + struct.pack(f"<{parties}H", *range(parties)) + pack_bits(words, bits)
        blob = pack_header(AGGREGATE_MAGIC, "mask", parties, r, shape, "bench") + body
        t0 = time.perf_counter()
        try:
            MASK.decode_aggregate(blob, at)
        except Exception:  # noqa: BLE001 - the zero aggregate is not a sum of masked counts
            pass
        decode.append(time.perf_counter() - t0)
    return {"parties": parties, "cells": shape[0] * shape[1], "bits": bits,
            "encode_s": round(statistics.median(encode), 4), "decode_s": round(statistics.median(decode), 4)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parties", type=int, nargs="+", default=[100, 200, 1000])
    ap.add_argument("--cells", type=int, default=140_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    for p in args.parties:
        print(json.dumps(measure(p, args.cells, args.rounds)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
