"""Packing counts into Paillier plaintexts: exact slot sums through pack -> encrypt -> add -> decrypt -> unpack."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.crypto.errors import CodecError
from fedtopic.crypto.packing import (
    banded_layout,
    bit_lengths,
    pack,
    pack_banded,
    packing_layout,
    unpack,
    unpack_banded,
)
from fedtopic.crypto.paillier import (
    decrypt_ints,
    encrypt_ints,
    generate_paillier_keys,
    plaintext_bits,
    sum_ciphertexts,
)

PUB, PRIV = generate_paillier_keys(1024)


def _pack_reference(values, layout):
    """Slow pure-Python packing: slot j of plaintext i holds values[i * slots + j]."""
    out = []
    for i in range(layout.n_plaintexts):
        chunk = values[i * layout.slots_per_plaintext : (i + 1) * layout.slots_per_plaintext]
        out.append(sum(int(v) << (j * layout.slot_bits) for j, v in enumerate(chunk)))
    return out


def test_layout_slot_width_fits_the_sum_over_parties():
    layout = packing_layout(526_200, max_value=6_000, n_summands=20, plaintext_bits=2047)
    assert layout.slot_bits == (120_000).bit_length() == 17
    assert layout.slots_per_plaintext == 2047 // 17 == 120
    assert layout.n_plaintexts == 4_385
    assert packing_layout(10, max_value=1, n_summands=1, plaintext_bits=5).slot_bits == 1


def test_layout_rejects_impossible_requests():
    with pytest.raises(CodecError, match="more than 63"):
        packing_layout(10, max_value=2**62, n_summands=4, plaintext_bits=2047)
    for bad in ({"max_value": 0}, {"n_summands": 0}, {"plaintext_bits": -1}):
        with pytest.raises(CodecError, match="must be an integer >= 1"):
            packing_layout(10, **{"max_value": 5, "n_summands": 2, "plaintext_bits": 100, **bad})


def test_pack_matches_slow_reference():
    rng = np.random.default_rng(5)
    layout = packing_layout(1_000, max_value=300, n_summands=7, plaintext_bits=plaintext_bits(PUB))
    values = rng.integers(0, 301, size=1_000)
    assert pack(values, layout) == _pack_reference(values, layout)
    np.testing.assert_array_equal(unpack(pack(values, layout), layout), values)


def test_pack_rejects_out_of_layout_values():
    layout = packing_layout(4, max_value=10, n_summands=2, plaintext_bits=64)
    with pytest.raises(CodecError, match=r"\[0, 10\]"):
        pack(np.array([0, 11, 0, 0]), layout)
    with pytest.raises(CodecError, match=r"\[0, 10\]"):
        pack(np.array([0, -1, 0, 0]), layout)
    with pytest.raises(CodecError, match="shape"):
        pack(np.array([1, 2, 3]), layout)


def test_unpack_detects_overflow_and_extra_summands():
    layout = packing_layout(4, max_value=10, n_summands=2, plaintext_bits=64)  # 5-bit slots, sums up to 20
    with pytest.raises(CodecError, match="overflows its slots"):
        unpack([1 << (layout.slots_per_plaintext * layout.slot_bits)], layout)
    three = [sum(p) for p in zip(*(pack(np.full(4, 10), layout) for _ in range(3)))]
    with pytest.raises(CodecError, match="exceeds 20"):
        unpack(three, layout)
    with pytest.raises(CodecError, match="expected 1 plaintexts"):
        unpack([], layout)


def test_full_pipeline_three_parties():
    rng = np.random.default_rng(11)
    parties = rng.integers(0, 51, size=(3, 700))
    layout = packing_layout(700, max_value=50, n_summands=3, plaintext_bits=plaintext_bits(PUB))
    cts = [encrypt_ints(PUB, pack(v, layout)) for v in parties]
    total = unpack(decrypt_ints(PRIV, sum_ciphertexts(PUB, cts)), layout)
    np.testing.assert_array_equal(total, parties.sum(axis=0))


@settings(max_examples=25, deadline=None)
@given(
    n_values=st.integers(1, 300),
    max_value=st.integers(1, 2**20),
    n_summands=st.integers(1, 6),
    data=st.data(),
)
def test_pack_encrypt_add_decrypt_unpack_property(n_values, max_value, n_summands, data):
    layout = packing_layout(n_values, max_value=max_value, n_summands=n_summands, plaintext_bits=plaintext_bits(PUB))
    n_parties = data.draw(st.integers(1, n_summands))
    seed = data.draw(st.integers(0, 2**32 - 1))
    vectors = np.random.default_rng(seed).integers(0, max_value + 1, size=(n_parties, n_values))
    vectors[:, 0] = max_value  # always exercise the widest slot sum
    cts = [encrypt_ints(PUB, pack(v, layout)) for v in vectors]
    total = unpack(decrypt_ints(PRIV, sum_ciphertexts(PUB, cts)), layout)
    np.testing.assert_array_equal(total, vectors.sum(axis=0))


@settings(max_examples=40, deadline=None)
@given(bounds=st.lists(st.integers(0, 2**40), min_size=1, max_size=60), parties=st.integers(1, 4),
       seed=st.integers(0, 2**32 - 1), bits=st.integers(41, 300))
def test_banded_sums_of_parties_within_each_bound_come_back_exactly(bounds, parties, seed, bits):
    """Each value's sum over the parties within its own bound: the banded plaintexts' sum unpacks to it."""
    rng = np.random.default_rng(seed)
    bound = np.array(bounds, dtype=np.int64)
    shares = np.stack([rng.integers(0, bound // parties + 1) for _ in range(parties)])  # Σ over parties ≤ bound
    shares[-1] += bound - shares.sum(axis=0) if seed % 2 else 0  # half the cases: every sum at its bound exactly
    layout = banded_layout(bound, plaintext_bits=bits)
    widths = {max(1, int(b).bit_length()) for b in bounds}
    assert layout.n_plaintexts == sum(-(-sum(max(1, int(b).bit_length()) == w for b in bounds) // (bits // w))
                                      for w in widths)
    packed = [pack_banded(s, layout) for s in shares]
    total = [sum(column) for column in zip(*packed)]
    assert np.array_equal(unpack_banded(total, layout), shares.sum(axis=0))


def test_banded_layout_refuses_a_value_beyond_its_bound_and_a_sum_beyond_it():
    layout = banded_layout(np.array([3, 0, 200, 7]), plaintext_bits=64)
    assert [int(band.slot_bits) for _, band in layout.bands] == [1, 2, 3, 8]
    with pytest.raises(CodecError, match="outside"):
        pack_banded(np.array([4, 0, 0, 0]), layout)  # 4 fits two bits, not its bound 3
    one = pack_banded(np.array([1, 0, 120, 3]), layout)
    with pytest.raises(CodecError, match="exceeds its bound"):
        unpack_banded([a + b for a, b in zip(one, one)], layout)  # 240 > 200 fits the 8-bit slot, not the bound
    big = pack_banded(np.array([0, 0, 200, 0]), layout)
    with pytest.raises(CodecError, match="overflows its slots"):
        unpack_banded([a + 2 * b for a, b in zip(one, big)], layout)  # 520: a carry into the band's padding


def test_bit_lengths_are_exact_at_every_power_of_two():
    values = np.array([0, 1, 2, 3, 4, 2**52 - 1, 2**53, 2**53 + 1, 2**62 - 1, 2**62, 2**63 - 1], dtype=np.int64)
    assert bit_lengths(values).tolist() == [int(v).bit_length() for v in values.tolist()]
