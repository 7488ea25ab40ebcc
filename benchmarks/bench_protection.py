"""CSFed update protection at the paper's scale: encode / combine / decode time and bytes per party per round.

V = 13,155 words, K = 40 topics, P = 20 parties, ~6,000 tokens per party (paper §8.1). A party's N_p is drawn
from a Zipf-like corpus model (word frequencies ∝ 1/rank, each word concentrated on a few topics as after
Gibbs sampling), so the top-ranked rows are dense and the tail sparse, like a real count matrix.
Paillier keys are 2048 bits. Times are wall-clock on this machine, with every worker thread (all cores).

- encode: party 0's ``encode_update`` (for Paillier: obfuscators r^n computed inside the call, on all cores;
  also timed with an ``ObfuscatorPool`` filled beforehand, i.e. overlapped with the Gibbs sweep as the runtime
  does, the pool's fill time reported separately);
- combine: the aggregator's ``combine`` of all P updates. Paillier updates of parties 1..P-1 reuse party 0's
  ciphertexts under their own headers (the aggregator's work is identical), and decode then must give P * N_0;
- decode: party 0's ``decode_aggregate`` (Paillier: parallel CRT decryption).

Run from the repository root: PYTHONPATH=. python benchmarks/bench_protection.py [--quick] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace

import numpy as np

from fedtopic.crypto.keys import generate_party_keys
from fedtopic.crypto.paillier import encrypt_ints, generate_paillier_keys
from fedtopic.crypto.protect import (
    PROTECTIONS,
    ObfuscatorPool,
    ProtectionContext,
    RoundInfo,
    rank_words,
)
from fedtopic.crypto.protect.base import HEADER
from fedtopic.crypto.protect.fastpaillier import decrypt_parallel, default_workers

V, K, P, TOKENS = 13_155, 40, 20, 6_000
CASES = [("none", "none", 0.0, True), ("mask", "mask", 0.0, True), ("iphe δ=0.5%", "paillier-iphe", 0.005, True),
         ("iphe δ=0.5% unpacked", "paillier-iphe", 0.005, False), ("uphe δ=0.5%", "paillier-uphe", 0.005, True),
         ("iphe δ=5%", "paillier-iphe", 0.05, True), ("iphe δ=5% unpacked", "paillier-iphe", 0.05, False),
         ("packed δ=100%", "paillier-packed", 1.0, True)]
"""(label, scheme, δ, packed): "unpacked" is the paper's one count per ciphertext (``"packed": false`` in the meta)."""


def party_counts(rng: np.random.Generator, word_p: np.ndarray, topic_pref: np.ndarray) -> np.ndarray:
    """N_p (int32, V x K) of ~TOKENS tokens: words by Zipf frequency, topics by each word's own preference."""
    words = rng.choice(V, size=TOKENS, p=word_p)
    cum = np.cumsum(topic_pref[words], axis=1)
    topics = (cum < rng.random(TOKENS)[:, None] * cum[:, -1:]).sum(axis=1)
    out = np.zeros((V, K), dtype=np.int32)
    np.add.at(out, (words, topics), 1)
    return out


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def with_party(payload: bytes, index: int) -> bytes:
    """The same update filed as party ``index`` (header field 'who')."""
    head = bytearray(payload[:HEADER.size])
    head[6:8] = index.to_bytes(2, "little")
    return bytes(head) + payload[HEADER.size:]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bits", type=int, default=2048)
    ap.add_argument("--quick", action="store_true", help="skip unpacked IPHE at delta = 5 %% (26,320 encryptions)")
    ap.add_argument("--cases", nargs="*", default=None, help="only the cases with these labels, as printed")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rng = np.random.default_rng(2024)
    word_p = 1.0 / np.arange(1, V + 1)
    word_p /= word_p.sum()
    topic_pref = rng.dirichlet(np.full(K, 0.1), size=V)
    mats = [party_counts(rng, word_p, topic_pref) for _ in range(P)]
    ranking = rank_words(np.sum(mats, axis=0).sum(axis=1))
    keys = [generate_party_keys(f"p{i}", seed=b"bench") for i in range(P)]
    paillier, t_keygen = timed(lambda: generate_paillier_keys(args.bits))
    workers = default_workers()
    print(f"V={V} K={K} P={P} tokens/party={TOKENS} nnz(N_0)={np.count_nonzero(mats[0])} key={args.bits} bits "
          f"keygen={t_keygen:.1f}s workers={workers} load={os.getloadavg()[0]:.1f}")  # fmt: skip
    base = ProtectionContext(session="bench", round=1, shape=(V, K), n_parties=P, party_index=0, max_value=TOKENS,
                             paillier_public=paillier.public, paillier_private=paillier.private, word_ranking=ranking,
                             x25519_private=keys[0].x25519_private_key,
                             party_publics=tuple(k.x25519_public for k in keys),
                             mask_secret=bytes(range(32)))  # fmt: skip
    ctxs = [replace(base, party_index=i, x25519_private=keys[i].x25519_private_key) for i in range(P)]
    truth = np.sum(mats, axis=0, dtype=np.int64)
    ids = tuple(f"p{i}" for i in range(P))
    rows = []
    for label, name, delta, packed in CASES:
        if (args.quick and label == "iphe δ=5% unpacked") or (args.cases and label not in args.cases):
            continue
        scheme = PROTECTIONS[name]
        cs = [replace(c, delta=delta) for c in ctxs]
        meta = scheme.session_meta(cs[0])
        if name.startswith("paillier"):
            meta["packed"] = packed  # the same combiner reads both; the meta says which
        view = RoundInfo("bench", 1, meta, ids, ids)
        extra = {}
        if name.startswith("paillier"):
            first, t_enc = timed(lambda: scheme.encode_update(mats[0], cs[0], meta))
            payloads = [first] + [with_party(first, i) for i in range(1, P)]
            expected = P * mats[0].astype(np.int64)
            # the runtime's way: obfuscators from a pool filled during the sweep (node/protection.py)
            n_ct = int.from_bytes(first[HEADER.size:HEADER.size + 4], "little")
            with ObfuscatorPool(paillier.public, paillier.private) as pool:
                _, t_fill = timed(lambda: pool.take(n_ct))  # what a background fill costs
                pool.prefill(n_ct)
                while pool.available < n_ct:
                    time.sleep(0.05)
                _, t_warm = timed(lambda: scheme.encode_update(mats[0], replace(cs[0], obfuscators=pool), meta))
            extra = {"ciphertexts": n_ct, "pool_fill_s": round(t_fill, 2),
                     "encode_with_ready_pool_s": round(t_warm, 3)}
        else:
            encoded = [timed(lambda i=i: scheme.encode_update(mats[i], cs[i])) for i in range(P)]
            payloads, t_enc = [e[0] for e in encoded], float(np.mean([e[1] for e in encoded]))
            expected = truth
        _, t_val = timed(lambda: scheme.validate(payloads[0], meta, round=1, session="bench"))
        aggregate, t_comb = timed(lambda: scheme.combine(payloads, view))
        decoded, t_dec = timed(lambda: scheme.decode_aggregate(aggregate, cs[0], meta)
                               if name.startswith("paillier") else scheme.decode_aggregate(aggregate, cs[0]))
        assert np.array_equal(decoded, expected), label
        row = {"scheme": label, "encode_s": round(t_enc, 3), "validate_s": round(t_val, 3),
               "combine_s": round(t_comb, 3), "decode_s": round(t_dec, 3), "update_bytes": len(payloads[0]),
               "aggregate_bytes": len(aggregate), **extra}  # fmt: skip
        rows.append(row)
        print(json.dumps(row, ensure_ascii=False), flush=True)
    sample = encrypt_ints(paillier.public, range(100 * workers))
    _, t1 = timed(lambda: decrypt_parallel(paillier.private, sample, workers=1))
    _, tn = timed(lambda: decrypt_parallel(paillier.private, sample, workers=workers))
    threads = {"decrypt_ms_1_thread": round(1e3 * t1 / len(sample), 2),
               f"decrypt_ms_{workers}_threads": round(1e3 * tn / len(sample), 2), "load": os.getloadavg()[0]}
    print(json.dumps(threads))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"rows": rows, "threads": threads, "keygen_s": t_keygen}, fh, indent=2, ensure_ascii=False)


if __name__ == "__main__":
    main()
