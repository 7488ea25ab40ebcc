"""What the aggregator holds never shows a protected cell or the secret key in the clear."""

import struct

import numpy as np
import pytest
from _protect_setup import PAILLIER, contexts, random_counts, run_round
from scipy import stats

from fedtopic.crypto.bitpack import packed_size, unpack_bits
from fedtopic.crypto.codec import decode_counts
from fedtopic.crypto.packing import unpack
from fedtopic.crypto.paillier import (
    ciphertext_bytes,
    decrypt_ints,
    private_key_to_bytes,
)
from fedtopic.crypto.protect import PROTECTIONS
from fedtopic.crypto.protect.base import HEADER
from fedtopic.crypto.protect.paillier_rows import parse_rows_meta

RNG = np.random.default_rng(7)
SHAPE = (40, 6)
MATS = [random_counts(RNG, SHAPE, 400) + 1 for _ in range(3)]  # every cell >= 1: a leak would show as a match


def _split_paillier(payload: bytes, n_ct: int) -> tuple[list[int], bytes]:
    body = payload[HEADER.size:]
    (count,) = struct.unpack_from("<I", body)
    assert count == n_ct
    width = ciphertext_bytes(PAILLIER.public)
    cts = [int.from_bytes(body[4 + i * width: 4 + (i + 1) * width], "big") for i in range(count)]
    return cts, body[4 + count * width:]


@pytest.mark.parametrize("name", ["paillier-iphe", "paillier-uphe"])
def test_protected_rows_reach_the_aggregator_only_as_ciphertexts(name):
    ranking = RNG.permutation(SHAPE[0])
    ctxs = contexts(SHAPE, delta=0.1, ranking=ranking)
    scheme = PROTECTIONS[name]
    meta, payloads, aggregate = run_round(scheme, MATS, ctxs)
    rows = np.array(meta["rows"])
    assert rows.size == 4 and set(rows) == set(ranking[:4] if name.endswith("iphe") else ranking[-4:])
    spec = parse_rows_meta(meta)
    assert spec.layout is not None and spec.n_ciphertexts < rows.size * SHAPE[1]  # counts packed into plaintexts
    for blob, mat in [*zip(payloads, MATS), (aggregate, sum(MATS))]:
        cts, codec = _split_paillier(blob, spec.n_ciphertexts)
        plain = decode_counts(codec, expected_shape=SHAPE)
        assert not plain[rows].any()  # protected rows are absent from the plaintext part
        others = np.setdiff1d(np.arange(SHAPE[0]), rows)
        assert np.array_equal(plain[others], mat[others])  # the rest is the paper's sparse plaintext
        assert all(c >= PAILLIER.public.n for c in cts)  # ciphertexts, not small integers
        assert unpack(decrypt_ints(PAILLIER.private, cts), spec.layout).tolist() == mat[rows].reshape(-1).tolist()


def test_packed_payload_is_all_ciphertext():
    ctxs = contexts(SHAPE)
    meta, payloads, aggregate = run_round(PROTECTIONS["paillier-packed"], MATS, ctxs)
    for blob in [*payloads, aggregate]:
        n_ct = struct.unpack_from("<I", blob, HEADER.size)[0]
        _, codec = _split_paillier(blob, n_ct)
        assert not decode_counts(codec, expected_shape=SHAPE).any()
        assert len(blob) == HEADER.size + 4 + n_ct * ciphertext_bytes(PAILLIER.public) + len(codec)


def test_mask_residues_are_uniform_and_differ_from_every_cell():
    shape = (500, 40)  # 20,000 cells per party
    mats = [random_counts(RNG, shape, 3000) for _ in range(3)]
    ctxs = contexts(shape, max_value=3000)
    meta, payloads, aggregate = run_round(PROTECTIONS["mask"], mats, ctxs)
    bits = meta["mask_bits"]
    assert bits == (3 * 3000).bit_length() + 1  # the largest sum of a cell, plus the spare bit
    for blob, mat in [*zip(payloads, mats), (aggregate, sum(mats))]:
        residues = unpack_bits(blob[-packed_size(mat.size, bits):], mat.size, bits)
        assert np.sum(residues == mat.reshape(-1)) <= 10 * mat.size / 2**bits + 5  # chance matches only
        high = residues >> (bits - 4)  # top 4 of the b bits: 16 equiprobable classes if uniform
        observed = np.bincount(high, minlength=16)
        assert stats.chisquare(observed).pvalue > 1e-4
        assert stats.chisquare(np.bincount(residues & 15, minlength=16)).pvalue > 1e-4
    plain = mats[0].copy()  # sanity of the test itself: plaintext counts are far from uniform
    assert stats.chisquare(np.bincount(plain.reshape(-1).astype(np.uint32) >> 28, minlength=16)).pvalue < 1e-4


def test_masks_change_every_round():
    ctx1, ctx2 = contexts(SHAPE, round=1)[0], contexts(SHAPE, round=2)[0]
    mask = PROTECTIONS["mask"]
    a, b = mask.encode_update(MATS[0], ctx1), mask.encode_update(MATS[0], ctx2)
    bits = mask.session_meta(ctx1)["mask_bits"]
    same = unpack_bits(a[HEADER.size:], MATS[0].size, bits) == unpack_bits(b[HEADER.size:], MATS[0].size, bits)
    assert same.sum() <= 3  # independent uniform residues: a match has probability 2^-b per cell


@pytest.mark.parametrize("name", sorted(PROTECTIONS))
def test_secret_key_never_reaches_the_aggregator(name):
    ctxs = contexts(SHAPE, delta=0.5)
    meta, payloads, aggregate = run_round(PROTECTIONS[name], MATS, ctxs)
    seen = b"".join(payloads) + aggregate + repr(meta).encode()
    secrets = [private_key_to_bytes(PAILLIER.private)]
    for prime in (PAILLIER.private.p, PAILLIER.private.q):
        raw = int(prime).to_bytes(64, "big")
        secrets += [raw[8:40], raw[::-1][8:40], format(prime, "x")[:32].encode()]  # 32-byte windows, both endians
    secrets += [ctx.x25519_private for ctx in ctxs] + [ctxs[0].mask_secret]
    for secret in secrets:
        assert secret not in seen
