"""Dense b-bit packing of mask residues: round trips and sums against a slow pure-Python reference."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.crypto.bitpack import (
    add_packed,
    check_packed,
    pack_bits,
    packed_size,
    unpack_bits,
)
from fedtopic.crypto.errors import CodecError

EDGE_WIDTHS = [1, 2, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64]


def _reference_pack(values: list[int], bits: int) -> bytes:
    """Slow: one big integer whose bits [i*b, (i+1)*b) are value i's low b bits, as little-endian bytes."""
    stream = sum((v & ((1 << bits) - 1)) << (i * bits) for i, v in enumerate(values))
    return stream.to_bytes(packed_size(len(values), bits), "little")


def _word(bits: int) -> type:
    return np.uint16 if bits <= 16 else np.uint32 if bits <= 32 else np.uint64


@st.composite
def widths_and_values(draw, max_len: int = 200):
    bits = draw(st.sampled_from(EDGE_WIDTHS) | st.integers(1, 64))
    word = 8 * np.dtype(_word(bits)).itemsize
    values = draw(st.lists(st.integers(0, 2**word - 1), max_size=max_len))  # high bits beyond b are dropped
    return bits, values


@settings(max_examples=300, deadline=None)
@given(widths_and_values())
def test_pack_matches_the_reference_and_unpacks_to_the_low_bits(case):
    bits, values = case
    arr = np.array(values, dtype=_word(bits))
    blob = pack_bits(arr, bits)
    assert blob == _reference_pack(values, bits)
    assert len(blob) == packed_size(len(values), bits) == (len(values) * bits + 7) // 8
    got = unpack_bits(blob, len(values), bits)
    assert got.dtype == _word(bits)
    assert [int(v) for v in got] == [v & ((1 << bits) - 1) for v in values]


@settings(max_examples=200, deadline=None)
@given(widths_and_values(max_len=80), st.integers(1, 6))
def test_add_packed_sums_modulo_the_accumulator_word(case, summands):
    bits, values = case
    word = _word(bits)
    low = (1 << bits) - 1
    rng = np.random.default_rng(len(values) * 64 + bits)
    parts = [np.array(values, dtype=word)] + [rng.integers(0, low, len(values), dtype=word, endpoint=True)
                                              for _ in range(summands - 1)]
    acc = np.zeros(len(values), dtype=word)
    for part in parts:
        add_packed(acc, pack_bits(part, bits), bits)
    expected = [sum(int(p[i]) & low for p in parts) % 2 ** (8 * acc.itemsize) for i in range(len(values))]
    assert [int(v) for v in acc] == expected


@pytest.mark.parametrize("bits", EDGE_WIDTHS)
def test_an_all_max_matrix_round_trips(bits):
    top = (1 << bits) - 1
    mat = np.full((37, 11), top, dtype=_word(bits))  # 407 cells: the stream ends mid-word for most widths
    blob = pack_bits(mat.reshape(-1), bits)
    assert len(blob) == packed_size(mat.size, bits)
    assert np.array_equal(unpack_bits(blob, mat.size, bits).reshape(mat.shape), mat)
    zeros = pack_bits(np.zeros(mat.size, dtype=_word(bits)), bits)
    assert len(zeros) == len(blob) and zeros == bytes(len(blob))


def test_empty_vector_packs_to_nothing():
    assert pack_bits(np.zeros(0, dtype=np.uint32), 17) == b""
    assert unpack_bits(b"", 0, 17).size == 0


def test_non_canonical_streams_and_bad_arguments_are_refused():
    blob = pack_bits(np.arange(5, dtype=np.uint16), 3)  # 15 bits: one padding bit in the last byte
    check_packed(blob, 5, 3)
    with pytest.raises(CodecError, match="padding"):
        check_packed(blob[:-1] + bytes([blob[-1] | 0x80]), 5, 3)
    with pytest.raises(CodecError, match="need 2"):
        unpack_bits(blob + b"\0", 5, 3)
    for bits in (0, 65):
        with pytest.raises(CodecError, match="bit width"):
            packed_size(4, bits)
    with pytest.raises(CodecError, match="cannot hold"):
        add_packed(np.zeros(2, dtype=np.uint16), pack_bits(np.zeros(2, dtype=np.uint32), 17), 17)
    with pytest.raises(CodecError, match="1-D unsigned"):
        pack_bits(np.zeros(3, dtype=np.int64), 8)
