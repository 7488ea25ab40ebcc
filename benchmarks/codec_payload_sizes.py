"""Payload sizes of the sparse count codec at the CSFed/DAFed paper's scale.

V = 13,155, K = 40, one party = 300 documents x 20 tokens = 6,000 tokens.
Two count states (a stand-in until real Gibbs states are at hand):
  - "random init": every token's topic uniform (the state published in round 0; the worst case);
  - "trained-like": words Zipf(1.07)-distributed, topic ~ theta_d[k] * psi_w[k] with
    theta_d ~ Dir(50/K) and psi_w ~ Dir(0.1): each word concentrates on a few topics, as after sampling.
Also the sum N_Sigma over 20 parties. Run from the repository root: PYTHONPATH=. python benchmarks/codec_payload_sizes.py
"""

from __future__ import annotations

import time
import zlib

import numpy as np

from fedtopic.crypto.codec import decode_counts, encode_counts
from fedtopic.crypto.envelope import SEAL_OVERHEAD_BYTES

V, K, DOCS, DOC_LEN, PARTIES = 13_155, 40, 300, 20, 20


def party_counts(rng: np.random.Generator, trained: bool, psi: np.ndarray, word_p: np.ndarray) -> np.ndarray:
    """N_p (V, K) for one party's 6,000 tokens."""
    words = rng.choice(V, size=(DOCS, DOC_LEN), p=word_p)
    if not trained:
        topics = rng.integers(0, K, size=words.shape)
    else:
        theta = rng.dirichlet(np.full(K, 50.0 / K), size=DOCS)  # (D, K)
        weights = theta[:, None, :] * psi[words]  # (D, L, K)
        cum = np.cumsum(weights, axis=2)
        topics = (cum < rng.random(words.shape)[..., None] * cum[..., -1:]).sum(axis=2)
    n_wk = np.zeros((V, K), dtype=np.int64)
    np.add.at(n_wk, (words.ravel(), topics.ravel()), 1)
    return n_wk


def measure(name: str, n_wk: np.ndarray) -> None:
    t0 = time.perf_counter()
    blob = encode_counts(n_wk)
    t1 = time.perf_counter()
    out = decode_counts(blob, expected_shape=(V, K))
    t2 = time.perf_counter()
    assert np.array_equal(out, n_wk)
    nnz = int(np.count_nonzero(n_wk))
    dense_zlib = len(zlib.compress(n_wk.astype(np.int32).tobytes(), 9))
    print(
        f"{name:<26} tokens={int(n_wk.sum()):>7,} nnz={nnz:>6,}  payload={len(blob):>7,} B "
        f"({len(blob) / nnz:.2f} B/cell, sealed {len(blob) + SEAL_OVERHEAD_BYTES:,} B)  "
        f"COO int32={12 * nnz:>8,} B  dense+zlib={dense_zlib:>7,} B  "
        f"encode {1e3 * (t1 - t0):.1f} ms  decode {1e3 * (t2 - t1):.1f} ms"
    )


def main() -> None:
    rng = np.random.default_rng(2024)
    word_p = 1.0 / np.arange(1, V + 1) ** 1.07
    word_p /= word_p.sum()
    psi = rng.dirichlet(np.full(K, 0.1), size=V)
    print(f"V={V} K={K}: dense int32 = {4 * V * K:,} B")
    for trained in (False, True):
        label = "trained-like" if trained else "random init"
        parties = [party_counts(rng, trained, psi, word_p) for _ in range(PARTIES)]
        measure(f"one party, {label}", parties[0])
        measure(f"sum of {PARTIES}, {label}", np.sum(parties, axis=0))


if __name__ == "__main__":
    main()
