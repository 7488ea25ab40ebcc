"""Paillier timings (phe + gmpy2) and the packed full word-topic matrix at the paper's scale.

Per operation at 2048 bits: encryption (fresh obfuscator), obfuscator alone (precomputable),
encryption with a precomputed obfuscator, homomorphic addition, decryption.
Packed: V*K = 13,155 * 40 counts, P = 20 parties, each cell <= 6,000 (a party's token count bounds
every cell), one core. `--full` encrypts/decrypts the whole packed matrix; otherwise `--sample`
plaintexts are timed and the total extrapolated (said so in the output).
Run from the repository root: PYTHONPATH=. python benchmarks/paillier_timing.py [--bits 2048] [--full]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fedtopic.crypto.packing import pack, packing_layout, unpack
from fedtopic.crypto.paillier import (
    decrypt_ints,
    encrypt_ints,
    generate_paillier_keys,
    plaintext_bits,
    random_obfuscators,
    sum_ciphertexts,
)

V, K, PARTIES, MAX_CELL = 13_155, 40, 20, 6_000


def per_op_ms(fn, count: int) -> float:
    t0 = time.perf_counter()
    fn()
    return 1e3 * (time.perf_counter() - t0) / count


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bits", type=int, default=2048)
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--sample", type=int, default=300)
    ap.add_argument("--full", action="store_true")
    args = ap.parse_args()

    t0 = time.perf_counter()
    pub, priv = generate_paillier_keys(args.bits)
    print(f"keygen {args.bits} bits: {time.perf_counter() - t0:.2f} s")
    values = list(range(1, args.ops + 1))
    cts: list[int] = []
    enc = per_op_ms(lambda: cts.extend(encrypt_ints(pub, values)), args.ops)
    obf: list[int] = []
    obf_ms = per_op_ms(lambda: obf.extend(random_obfuscators(pub, args.ops)), args.ops)
    pre = per_op_ms(lambda: encrypt_ints(pub, values, obfuscators=obf), args.ops)
    add = per_op_ms(lambda: sum_ciphertexts(pub, [cts, cts]), args.ops)
    dec = per_op_ms(lambda: decrypt_ints(priv, cts), args.ops)
    print(f"per op: encrypt {enc:.2f} ms | obfuscator r^n {obf_ms:.2f} ms | encrypt w/ precomputed {pre:.3f} ms"
          f" | add {add:.4f} ms | decrypt {dec:.2f} ms")  # fmt: skip

    layout = packing_layout(V * K, max_value=MAX_CELL, n_summands=PARTIES, plaintext_bits=plaintext_bits(pub))
    n_pt = layout.n_plaintexts
    print(f"packed layout: {layout.slot_bits}-bit slots, {layout.slots_per_plaintext} per plaintext, "
          f"{n_pt:,} ciphertexts = {n_pt * 2 * args.bits // 8 / 1e6:.2f} MB per party (unpacked: {V * K:,})")  # fmt: skip
    rng = np.random.default_rng(0)
    counts = np.zeros(V * K, dtype=np.int64)
    np.add.at(counts, rng.integers(0, V * K, 6_000), 1)
    t0 = time.perf_counter()
    plains = pack(counts, layout)
    t_pack = time.perf_counter() - t0
    n = n_pt if args.full else min(args.sample, n_pt)
    t0 = time.perf_counter()
    packed_cts = encrypt_ints(pub, plains[:n])
    t_enc = (time.perf_counter() - t0) * n_pt / n
    t0 = time.perf_counter()
    total = sum_ciphertexts(pub, [packed_cts] * PARTIES)
    t_add = (time.perf_counter() - t0) * n_pt / n
    t0 = time.perf_counter()
    dec_plain = decrypt_ints(priv, total)
    t_dec = (time.perf_counter() - t0) * n_pt / n
    if args.full:
        t0 = time.perf_counter()
        np.testing.assert_array_equal(unpack(dec_plain, layout), PARTIES * counts)
        t_unpack = time.perf_counter() - t0
    else:
        t_unpack = float("nan")
    how = "measured" if args.full else f"extrapolated from {n} ciphertexts"
    print(f"full packed matrix ({how}): pack {t_pack:.2f} s, encrypt {t_enc:.1f} s, aggregate {PARTIES} parties "
          f"{t_add:.2f} s, decrypt {t_dec:.1f} s, unpack {t_unpack:.2f} s")  # fmt: skip
    print(f"unpacked full matrix would take {V * K * enc / 1e3:,.0f} s to encrypt")


if __name__ == "__main__":
    main()
