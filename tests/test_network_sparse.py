"""The sparse wire form of ``dense-sum`` vectors: round trips, the choice of form, sums and hostile payloads."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from fedtopic.network.combiners import RoundContext, get_combiner
from fedtopic.network.dense import encode_dense
from fedtopic.network.errors import InvalidPayload
from fedtopic.network.sparse import (
    HEADER,
    MAGIC,
    _gather,
    _scatter,
    decode_array,
    encode_array,
    encode_sparse,
)

META = {"shape": [4, 5], "dtype": "float64"}


def _ctx(n: int) -> RoundContext:
    parties = tuple(f"p{i}" for i in range(n))
    return RoundContext("s", 0, META, parties, parties)


def _mostly_zero(rng: np.random.Generator, shape: tuple[int, ...], keep: float) -> np.ndarray:
    return rng.normal(size=shape) * (rng.random(shape) < keep)


@settings(max_examples=60, deadline=None)
@given(arrays(st.sampled_from([np.float64, np.float32, np.int64]), st.tuples(st.integers(1, 6), st.integers(1, 9)),
              elements={"allow_nan": False, "allow_infinity": False, "min_value": -1e6, "max_value": 1e6}))
def test_both_forms_round_trip(arr: np.ndarray) -> None:
    for blob in (encode_sparse(arr), encode_array(arr), encode_dense(arr)):
        out = decode_array(blob, arr.shape, arr.dtype.name)
        np.testing.assert_array_equal(out, arr)
        assert out.dtype == arr.dtype


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 200), st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]), st.sampled_from(["float64", "float32", "int64"]),
       st.integers(0, 2**32 - 1))
def test_the_kernels_match_numpy_masks_at_every_length(n: int, keep: float, dtype: str, seed: int) -> None:
    """The numba gather/scatter against numpy's boolean indexing (the slow reference), with lengths that end
    mid-byte, all-zero and all-set bytes, and guard elements around the arrays that must stay untouched."""
    rng = np.random.default_rng(seed)
    arr = (rng.normal(size=n) * 1e3 * (rng.random(n) < keep)).astype(dtype)
    arr[arr == 0] = 0  # no −0.0: the form keeps zeros as +0
    blob = encode_sparse(arr)
    mask = arr != 0
    reference = HEADER.pack(MAGIC, ["float64", "float32", "int64"].index(dtype), n) + \
        np.packbits(mask, bitorder="little").tobytes() + arr[mask].astype(np.dtype(dtype).newbyteorder("<")).tobytes()
    assert blob == reference
    np.testing.assert_array_equal(decode_array(blob, (n,), dtype), arr)
    bits, m = np.packbits(mask, bitorder="little"), int(mask.sum())
    guarded = np.full(n + 16, 7, dtype=dtype)  # the kernels on views: a write past either end shows
    guarded[8:8 + n] = 0  # the scatter writes only bytes with a set bit: the rest arrives zeroed
    if m:
        _scatter(bits, arr[mask], guarded[8:8 + n])
        np.testing.assert_array_equal(guarded[8:8 + n], arr)
    spare = np.full(m + 17, 7, dtype=dtype)
    _gather(arr, bits, spare[8:8 + m + 1])
    np.testing.assert_array_equal(spare[8:8 + m], arr[mask])
    assert (guarded[:8] == 7).all() and (guarded[8 + n:] == 7).all()
    assert (spare[:8] == 7).all() and (spare[9 + m:] == 7).all()


def test_the_smaller_form_is_chosen() -> None:
    rng = np.random.default_rng(0)
    sparse = _mostly_zero(rng, (100, 50), 0.1)
    dense = rng.normal(size=(100, 50))
    assert encode_array(sparse).startswith(MAGIC)
    assert len(encode_array(sparse)) < len(encode_dense(sparse)) / 4
    assert encode_array(dense) == encode_dense(dense)


def test_sum_of_mixed_forms_equals_the_dense_sum_bit_for_bit() -> None:
    rng = np.random.default_rng(1)
    arrs = [_mostly_zero(rng, (4, 5), p) for p in (0.05, 0.2, 1.0)]
    combiner = get_combiner("dense-sum")
    blobs = [encode_array(a) for a in arrs]
    assert blobs[0].startswith(MAGIC) and not blobs[2].startswith(MAGIC)
    for b in blobs:
        combiner.validate(b, META)
    got = decode_array(combiner.combine(blobs, _ctx(3)), (4, 5), "float64")
    want = np.zeros((4, 5))
    for a in arrs:
        want = want + a
    assert (got == want).all()


def _crafted(bits: list[int], values: list[float], *, n: int = 20, code: int = 0) -> bytes:
    head = HEADER.pack(MAGIC, code, n)
    mask = np.zeros(-(-n // 8) * 8, dtype=bool)
    mask[bits] = True
    return head + np.packbits(mask, bitorder="little").tobytes() + np.array(values, "<f8").tobytes()


@pytest.mark.parametrize(("blob", "message"), [
    (_crafted([3, 4], [1.0]), "2 entries needs"),
    (_crafted([3], [1.0, 2.0]), "1 entries needs"),
    (_crafted([21], [1.0]), "padding bit"),
    (_crafted([1], [float("nan")]), "NaN or infinite value at index 1"),
    (_crafted([1, 7], [1.0, float("-inf")]), "NaN or infinite value at index 7"),
    (_crafted([1], [1.0], n=21), "21 elements"),
    (_crafted([1], [1.0], code=1), "dtype code"),
    (_crafted([1], [1.0], code=99), "dtype code"),
    (_crafted([1], [1.0]) + b"\x00", "bytes"),
    (_crafted([1], [1.0])[:HEADER.size + 2], "shorter than its 20-element bitmap"),
    (MAGIC + b"\x00", "shorter than its header"),
])
def test_hostile_sparse_payloads_are_refused(blob: bytes, message: str) -> None:
    with pytest.raises(InvalidPayload, match=message):
        get_combiner("dense-sum").validate(blob, META)


def test_nonnegative_sessions_check_sparse_values() -> None:
    blob = encode_sparse(np.array([0.0, 0.0, -2.0, 0.0]))
    with pytest.raises(InvalidPayload, match="negative value"):
        get_combiner("dense-sum").validate(blob, {"shape": [4], "dtype": "float64", "nonnegative": True})



_WARM_UP_CHILD = """
import sys, threading
from fedtopic.network import sparse
from fedtopic.network.schemas import SessionCreate
from fedtopic.network.service import Aggregator
from fedtopic.network.store import Store
def loaded():
    return [any(sig[0].dtype.name == "int64" for sig in sparse._gather.signatures),
            any(sig[1].dtype.name == "int64" for sig in sparse._scatter.signatures)]
assert loaded() == [False, False], loaded()
agg = Aggregator(Store(__import__("pathlib").Path(sys.argv[1])), {"a": "0x" + "0" * 39 + "1"}, protection="none",
                 default_deadline=30.0)
agg.open_session(SessionCreate(session_id="s", parties=["a"], combiner="dense-sum",
                               meta={"shape": [5], "dtype": "int64"}), "a")
for t in [t for t in threading.enumerate() if t.name == "warm-up"]:
    t.join(60)
assert loaded() == [True, True], loaded()
"""


def test_a_dense_sum_session_loads_the_codecs_compiled_code_when_it_opens(tmp_path) -> None:
    """Opening a dense-sum session loads the bitmap kernels for its dtype in the background (0.3 s that would
    otherwise land in the first round), in a fresh interpreter where nothing loaded them before."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _WARM_UP_CHILD, str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


_PARTY_WARM_UP_CHILD = """
import threading
from fedtopic.network import sparse
from fedtopic.node.dense_session import DenseSession
assert not sparse._gather.signatures and not sparse._scatter.signatures
for _ in range(3):  # a party's sessions of one dtype: one warm-up between them
    DenseSession(None, ["a"], 5, None, "float32")
assert sum(t.name == "warm-up" for t in threading.enumerate()) <= 1
for t in [t for t in threading.enumerate() if t.name == "warm-up"]:
    t.join(60)
assert any(sig[0].dtype.name == "float32" for sig in sparse._gather.signatures), sparse._gather.signatures
assert any(sig[1].dtype.name == "float32" for sig in sparse._scatter.signatures), sparse._scatter.signatures
"""


def test_a_partys_dense_session_loads_the_codecs_compiled_code_when_it_opens() -> None:
    """The party's side, as the aggregator's: a session's kernels load in the background when it opens, once
    per dtype however many sessions the party opens."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _PARTY_WARM_UP_CHILD], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
