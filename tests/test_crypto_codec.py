"""Sparse count codec: exact round-trips, and every kind of corrupt payload is refused."""

import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fedtopic.crypto.codec import (
    HEADER,
    MAGIC,
    MAX_CELLS,
    MAX_COUNT,
    VERSION,
    decode_counts,
    encode_counts,
)
from fedtopic.crypto.errors import CodecError, CryptoError


def _sparse(rng, shape, n_tokens):
    out = np.zeros(shape, dtype=np.int64)
    np.add.at(out, (rng.integers(0, shape[0], n_tokens), rng.integers(0, shape[1], n_tokens)), 1)
    return out


def _payload(v, k, nnz, body: bytes, body_len=None, magic=MAGIC, version=VERSION) -> bytes:
    header = HEADER.pack(magic, version, bytes(3), v, k, nnz, len(body) if body_len is None else body_len)
    return header + zlib.compress(body)


def test_codec_error_is_a_crypto_error():
    assert issubclass(CodecError, CryptoError)


@settings(max_examples=80, deadline=None)
@given(
    hnp.arrays(
        dtype=st.sampled_from([np.int32, np.int64, np.uint16, np.int8]),
        shape=hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=40),
        elements=st.integers(0, 127) | st.just(0),
    )
)
def test_roundtrip_property(arr):
    out = decode_counts(encode_counts(arr), expected_shape=arr.shape)
    assert out.dtype == np.int32 and out.shape == arr.shape
    np.testing.assert_array_equal(out, arr)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2999), st.integers(1, MAX_COUNT)), max_size=50), st.integers(1, 300))
def test_roundtrip_large_counts_and_gaps(cells, k):
    arr = np.zeros((3000, k), dtype=np.int64)
    for flat, count in cells:
        arr.reshape(-1)[flat % arr.size] = count
    np.testing.assert_array_equal(decode_counts(encode_counts(arr)), arr)


def test_encoding_is_canonical_and_sparse():
    rng = np.random.default_rng(1)
    arr = _sparse(rng, (13155, 40), 6000)
    blob = encode_counts(arr)
    assert blob == encode_counts(arr.astype(np.int32))
    assert len(blob) < 2 * 6000  # dense int32 would be 2,104,800 bytes


def test_encode_rejects_bad_matrices():
    with pytest.raises(CodecError, match="negative count -2 at word 1, topic 0"):
        encode_counts(np.array([[0, 1], [-2, 0]]))
    with pytest.raises(CodecError, match="exceeds"):
        encode_counts(np.array([[MAX_COUNT + 1]], dtype=np.int64))
    with pytest.raises(CodecError, match="2-D"):
        encode_counts(np.zeros(5, dtype=int))
    with pytest.raises(CodecError, match="integer dtype"):
        encode_counts(np.zeros((2, 2)))
    with pytest.raises(CodecError, match="empty"):
        encode_counts(np.zeros((0, 3), dtype=int))


def test_vocabulary_mismatch_is_reported():
    blob = encode_counts(np.ones((5, 3), dtype=int))
    with pytest.raises(CodecError, match=r"vocabulary mismatch: payload has V=5 K=3, expected V=6 K=3"):
        decode_counts(blob, expected_shape=(6, 3))


def test_bad_magic_version_and_truncated_header():
    blob = encode_counts(np.eye(4, dtype=int))
    with pytest.raises(CodecError, match="bad magic"):
        decode_counts(b"XXXX" + blob[4:])
    with pytest.raises(CodecError, match="version 2"):
        decode_counts(blob[:4] + bytes([2]) + blob[5:])
    with pytest.raises(CodecError, match="reserved"):
        decode_counts(blob[:6] + b"\1" + blob[7:])
    for cut in (0, 10, HEADER.size - 1):
        with pytest.raises(CodecError, match="truncated"):
            decode_counts(blob[:cut])


def test_every_truncation_and_trailing_byte_is_refused():
    blob = encode_counts(np.arange(30).reshape(6, 5))
    for cut in range(HEADER.size, len(blob)):
        with pytest.raises(CodecError):
            decode_counts(blob[:cut])
    with pytest.raises(CodecError, match="trailing"):
        decode_counts(blob + b"\0")


def test_every_single_byte_corruption_is_refused_or_detected():
    """Flipping a byte either raises CodecError or (header fields only) yields a different, still valid matrix.

    (0x55 touches neither zlib's ignorable FLEVEL bits nor this stream's final padding bits.)
    """
    arr = np.arange(30).reshape(6, 5)
    blob = encode_counts(arr)
    for i in range(len(blob)):
        bad = bytearray(blob)
        bad[i] ^= 0x55
        try:
            out = decode_counts(bytes(bad), expected_shape=(6, 5))
        except CodecError:
            continue
        assert not np.array_equal(out, arr), f"corruption at byte {i} went unnoticed"


def test_body_corruptions():
    one = bytes([0, 1])  # index 0, count 1
    assert decode_counts(_payload(2, 2, 1, one))[0, 0] == 1
    with pytest.raises(CodecError, match="not strictly increasing"):
        decode_counts(_payload(2, 2, 2, bytes([0, 0, 1, 1])))
    with pytest.raises(CodecError, match="out of range"):
        decode_counts(_payload(2, 2, 1, bytes([4, 1])))
    with pytest.raises(CodecError, match=r"count out of range"):
        decode_counts(_payload(2, 2, 1, bytes([0, 0])))
    big = bytes([0x80, 0x80, 0x80, 0x80, 0x08])  # 2^31: would be negative as int32
    with pytest.raises(CodecError, match=r"count out of range \[1, 2147483647\]"):
        decode_counts(_payload(2, 2, 1, bytes([0]) + big))
    with pytest.raises(CodecError, match="non-canonical"):
        decode_counts(_payload(2, 2, 1, bytes([0x81, 0x00, 1])))
    with pytest.raises(CodecError, match="too large"):
        decode_counts(_payload(2, 2, 1, bytes([0x80] * 5 + [1, 1])))
    with pytest.raises(CodecError, match="trailing bytes after the counts"):
        decode_counts(_payload(2, 2, 1, bytes([0, 1, 1])))
    with pytest.raises(CodecError, match="truncated"):
        decode_counts(_payload(2, 2, 2, bytes([0, 1, 1, 0x81])))
    with pytest.raises(CodecError, match="damaged"):
        decode_counts(HEADER.pack(MAGIC, VERSION, bytes(3), 2, 2, 1, 2) + b"not zlib")
    with pytest.raises(CodecError, match=r"non-zero cells in a 2x2"):
        decode_counts(_payload(2, 2, 5, bytes(10)))


def test_decompression_bomb_is_capped_by_header():
    bomb = bytes(50_000_000)  # 50 MB of zeros, ~50 kB compressed
    blob = HEADER.pack(MAGIC, VERSION, bytes(3), 100, 10, 2, 4) + zlib.compress(bomb, 9)
    with pytest.raises(CodecError, match="does not match the header's length"):
        decode_counts(blob)
    empty = HEADER.pack(MAGIC, VERSION, bytes(3), 100, 10, 0, 0) + zlib.compress(bomb, 9)  # max_length=0 must not mean "no limit"
    with pytest.raises(CodecError, match="does not match"):
        decode_counts(empty)
    with pytest.raises(CodecError, match="impossible"):
        decode_counts(HEADER.pack(MAGIC, VERSION, bytes(3), 100, 10, 2, 10**9) + zlib.compress(bytes(4)))


def test_oversized_shape_refused_before_allocation():
    blob = HEADER.pack(MAGIC, VERSION, bytes(3), 2**32 - 1, 2**32 - 1, 0, 0) + zlib.compress(b"")
    with pytest.raises(CodecError, match=f"larger than {MAX_CELLS}"):
        decode_counts(blob)
    zero = HEADER.pack(MAGIC, VERSION, bytes(3), 0, 3, 0, 0) + zlib.compress(b"")
    with pytest.raises(CodecError, match="empty"):
        decode_counts(zero)


def test_all_zero_matrix_roundtrips():
    blob = encode_counts(np.zeros((7, 3), dtype=np.int32))
    assert struct.unpack_from("<Q", blob, 16)[0] == 0
    assert not decode_counts(blob).any()


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200), st.booleans())
def test_arbitrary_bytes_never_crash(junk, with_header):
    blob = (HEADER.pack(MAGIC, VERSION, bytes(3), 20, 5, 3, 6) + junk) if with_header else junk
    try:
        out = decode_counts(blob)
    except CodecError:
        return
    assert out.dtype == np.int32 and (out >= 0).all()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.data())
def test_random_corruption_is_refused_or_visible(seed, data):
    arr = _sparse(np.random.default_rng(seed), (50, 8), 120)
    blob = bytearray(encode_counts(arr))
    pos = data.draw(st.integers(0, len(blob) - 1))
    blob[pos] ^= data.draw(st.integers(1, 255))
    try:
        out = decode_counts(bytes(blob), expected_shape=(50, 8))
    except CodecError:
        return
    assert _deflate_ignores(encode_counts(arr), bytes(blob)) or not np.array_equal(out, arr)


def _deflate_ignores(original: bytes, corrupted: bytes) -> bool:
    """Whether zlib itself inflates the corrupted stream to the original body: a flip in bits deflate never reads
    (zlib's FLEVEL bits, the final byte's padding, code lengths of symbols a dynamic block does not use)."""
    try:
        return zlib.decompress(corrupted[HEADER.size:]) == zlib.decompress(original[HEADER.size:])
    except zlib.error:
        return False
