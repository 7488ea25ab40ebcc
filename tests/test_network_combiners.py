"""Combiners (the data aggregator's maths) and the dense wire format, against plain numpy sums."""

from __future__ import annotations

import io
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fedtopic.crypto.codec import HEADER, MAGIC, encode_counts
from fedtopic.network.combiners import COMBINERS, RoundContext, get_combiner
from fedtopic.network.dense import decode_dense, encode_dense
from fedtopic.network.errors import InvalidMeta, InvalidPayload


def _ctx(meta: dict, n: int) -> RoundContext:
    parties = tuple(f"p{i}" for i in range(n))
    return RoundContext("s", 0, meta, parties, parties)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 7), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_count_sum_equals_numpy_sum(v: int, k: int, parties: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    mats = [rng.integers(0, 50, (v, k)) * (rng.random((v, k)) < 0.4) for _ in range(parties)]
    none = COMBINERS["none"]
    meta = {"shape": [v, k]}
    payloads = [encode_counts(m) for m in mats]
    for p in payloads:
        none.validate(p, meta)
    assert none.combine(payloads, _ctx(meta, parties)) == encode_counts(sum(mats))


def test_count_validation_refuses_wrong_shape_and_crafted_counts() -> None:
    none = COMBINERS["none"]
    meta = {"shape": [3, 2]}
    with pytest.raises(InvalidPayload, match="vocabulary mismatch"):
        none.validate(encode_counts(np.ones((2, 3), int)), meta)
    # a hand-made payload storing a zero count (the codec's counts are >= 1; negatives are unrepresentable)
    body = bytes([0, 0])  # gap 0 at index 0, count 0
    crafted = HEADER.pack(MAGIC, 1, bytes(3), 3, 2, 1, len(body)) + zlib.compress(body)
    with pytest.raises(InvalidPayload, match="count out of range"):
        none.validate(crafted, meta)
    with pytest.raises(InvalidPayload):
        none.validate(b"\x00" * 40, meta)
    for bad in ({}, {"shape": [3]}, {"shape": [3, 0]}, {"shape": [3, True]}, {"shape": "3x2"}):
        with pytest.raises(InvalidMeta):
            none.check_meta(bad)


@settings(max_examples=40, deadline=None)
@given(arrays(st.sampled_from([np.float64, np.float32, np.int64]), st.tuples(st.integers(1, 4), st.integers(1, 3)),
              elements={"allow_nan": False, "allow_infinity": False, "min_value": -1e6, "max_value": 1e6}))
def test_dense_round_trip(arr: np.ndarray) -> None:
    """The payload is numpy's own NPY bytes (header built once per shape, not by numpy each time), and reads
    back whether its header is that one or another valid formatting of it (parsed in full)."""
    blob = encode_dense(arr)
    numpys = io.BytesIO()
    np.lib.format.write_array(numpys, arr.astype(arr.dtype.newbyteorder("<")), version=(1, 0), allow_pickle=False)
    assert blob == numpys.getvalue()
    reformatted = blob.replace(b"), }", b")}  ", 1)  # no trailing comma: a header numpy's reader takes too
    assert reformatted != blob and len(reformatted) == len(blob)
    for payload in (blob, reformatted):
        out = decode_dense(payload, arr.shape, arr.dtype.name)
        np.testing.assert_array_equal(out, arr)
        assert out.dtype == arr.dtype
    for bad, why in ((blob[:-1], "body is"), (blob.replace(b"False", b"True ", 1), "C-ordered")):
        with pytest.raises(InvalidPayload, match=why):
            decode_dense(bad, arr.shape, arr.dtype.name)


def test_dense_sum_and_its_refusals() -> None:
    dense = get_combiner("dense-sum")
    meta = {"shape": [2, 3], "dtype": "float64"}
    rng = np.random.default_rng(0)
    arrs = [rng.normal(size=(2, 3)) for _ in range(3)]
    out = decode_dense(dense.combine([encode_dense(a) for a in arrs], _ctx(meta, 3)), (2, 3), "float64")
    np.testing.assert_allclose(out, sum(arrs))
    nan = arrs[0].copy()
    nan[1, 2] = np.nan
    with pytest.raises(InvalidPayload, match=r"NaN or infinite value at index \(1, 2\)"):
        dense.validate(encode_dense(nan), meta)
    with pytest.raises(InvalidPayload, match="negative value"):
        dense.validate(encode_dense(np.array([[0.0, -1.0, 2.0], [0, 0, 0]])), {**meta, "nonnegative": True})
    dense.validate(encode_dense(np.array([[0.0, -1.0, 2.0], [0, 0, 0]])), meta)  # signed updates are fine
    with pytest.raises(InvalidPayload, match="dtype"):
        dense.validate(encode_dense(arrs[0].astype(np.float32)), meta)
    with pytest.raises(InvalidPayload, match="shape"):
        dense.validate(encode_dense(arrs[0].T.copy()), meta)
    with pytest.raises(InvalidPayload, match="bytes"):
        dense.validate(encode_dense(arrs[0]) + b"\x00", meta)
    with pytest.raises(InvalidPayload, match="not an NPY"):
        dense.validate(b"\x93NUMPY\x01\x00garbage", meta)
    with pytest.raises(InvalidPayload, match="overflow"):
        big = np.full((2, 3), 2**62, dtype=np.int64)
        dense.combine([encode_dense(big)] * 2, _ctx({"shape": [2, 3], "dtype": "int64"}, 2))
    for sign in (1.0, -1.0):  # a float32 sum past float32's range either way is refused, not sent as ±inf
        near = np.full((2, 3), 0.0, dtype=np.float32)
        near[1, 2] = sign * 3e38
        with pytest.raises(InvalidPayload, match="float32 sum overflows"):
            dense.combine([encode_dense(near)] * 2, _ctx({"shape": [2, 3], "dtype": "float32"}, 2))
    fine = np.full((2, 3), -1.5e38, dtype=np.float32)
    assert np.array_equal(decode_dense(dense.combine([encode_dense(fine)] * 2,
                                                     _ctx({"shape": [2, 3], "dtype": "float32"}, 2)), (2, 3),
                                       "float32"), fine * 2)
    with pytest.raises(InvalidMeta, match="dtype"):
        dense.check_meta({"shape": [2], "dtype": "complex128"})
    with pytest.raises(InvalidMeta, match="not available"):
        get_combiner("paillier-nope")
