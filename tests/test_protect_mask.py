"""Masking with parties that drop out of a round: recovery messages give the survivors' exact sum."""

import numpy as np
import pytest
from _protect_setup import contexts, random_counts, view

from fedtopic.crypto.bitpack import pack_bits, packed_size, unpack_bits
from fedtopic.crypto.protect import (
    MASK,
    InvalidUpdate,
    ProtectionError,
    RecoveryNeeded,
    mask_recovery,
)
from fedtopic.crypto.protect.base import HEADER
from fedtopic.crypto.protect.mask import _Keystreams, _pair_key, _self_key

SHAPE = (50, 8)
RNG = np.random.default_rng(5)
MATS = [random_counts(RNG, SHAPE, 300) for _ in range(4)]
CTXS = contexts(SHAPE, parties=4)
META = MASK.session_meta(CTXS[0])
UPDATES = [MASK.encode_update(m, c) for m, c in zip(MATS, CTXS)]


@pytest.mark.parametrize("survivors", [[0, 1, 3], [1, 2], [0], [2, 3], [0, 1, 2, 3]])
def test_dropout_recovery_gives_the_survivors_sum(survivors):
    dropped = sorted(set(range(4)) - set(survivors))
    rv = view(META, survivors, parties=4)
    payloads = [UPDATES[i] for i in survivors]
    if dropped:
        with pytest.raises(RecoveryNeeded) as info:
            MASK.combine(payloads, rv)
        assert info.value.dropped == tuple(dropped) and info.value.survivors == tuple(survivors)
    recoveries = [mask_recovery(dropped, CTXS[i]) for i in survivors] if dropped else []
    for r in recoveries:
        assert MASK.validate_recovery(r, META, round=1)[1] == dropped
    aggregate = MASK.combine(payloads, rv, recoveries=recoveries)
    expected = np.sum([MATS[i] for i in survivors], axis=0, dtype=np.int64)
    assert np.array_equal(MASK.decode_aggregate(aggregate, CTXS[survivors[0]]), expected)


def test_a_missing_recovery_is_reported_and_wrong_ones_refused():
    survivors, payloads = [0, 2, 3], [UPDATES[i] for i in (0, 2, 3)]
    rv = view(META, survivors, parties=4)
    recs = {i: mask_recovery([1], CTXS[i]) for i in survivors}
    with pytest.raises(RecoveryNeeded, match=r"from \[3\]"):
        MASK.combine(payloads, rv, recoveries=[recs[0], recs[2]])
    with pytest.raises(InvalidUpdate, match="does not fit"):
        MASK.combine(payloads, rv, recoveries=[recs[0], recs[2], recs[2]])
    with pytest.raises(InvalidUpdate, match="does not fit"):
        MASK.combine(payloads, rv, recoveries=[recs[0], recs[2], mask_recovery([1, 2], CTXS[3])])
    with pytest.raises(InvalidUpdate, match="nobody dropped"):
        MASK.combine(UPDATES, view(META, [0, 1, 2, 3], parties=4), recoveries=[recs[0]])
    with pytest.raises(ProtectionError, match="dropped parties"):
        mask_recovery([0], CTXS[0])



def test_a_late_update_stays_hidden_after_its_pair_masks_are_revealed():
    """Double masking: the aggregator strips y_1's pairwise masks (revealed for recovery); N_1 is still masked."""
    survivors = [0, 2, 3]
    recs = [mask_recovery([1], CTXS[i]) for i in survivors]
    bits, cells = META["mask_bits"], MATS[1].size
    late = unpack_bits(UPDATES[1][HEADER.size:], cells, bits)
    low = late.dtype.type((1 << bits) - 1)
    for r in recs:  # survivor i's correction is -(its term with party 1) = y_1's term with i
        late -= unpack_bits(r[-len(UPDATES[1]) + HEADER.size:], cells, bits)
    late &= low
    assert np.mean(late == MATS[1].reshape(-1)) < 0.05  # still masked by party 1's self mask
    streams = _Keystreams(cells, bits)
    self_mask = streams(_self_key(CTXS[1], 1)).copy() - streams(_self_key(CTXS[1], 2))  # s_1 = R_1 - R_2
    assert np.array_equal((late - self_mask) & low, MATS[1].reshape(-1))  # the test's algebra is right


def test_pair_keys_agree_between_the_two_parties_and_nowhere_else():
    assert _pair_key(CTXS[0], 2) == _pair_key(CTXS[2], 0)
    assert _pair_key(CTXS[0], 2) != _pair_key(CTXS[0], 3)
    other_round = contexts(SHAPE, parties=4, round=2)
    assert _pair_key(other_round[0], 2) != _pair_key(CTXS[0], 2)


def test_survivors_sum_without_recovery_does_not_decode():
    """If the aggregator skipped recovery, leftover pair masks make the decoder refuse (no silent wrong sum)."""
    from fedtopic.crypto.protect.mask import MaskScheme

    class NoRecovery(MaskScheme):
        def combine(self, payloads, view, *, recoveries=()):
            bits, cells = META["mask_bits"], MATS[0].size
            total = sum(unpack_bits(p[HEADER.size:], cells, bits) for p in payloads)
            head = UPDATES[0][:HEADER.size].replace(b"FTPU", b"FTPA")
            idx = np.array([len(payloads), 0, 2, 3], "<u2").tobytes()
            return head[:6] + len(payloads).to_bytes(2, "little") + head[8:] + idx + pack_bits(total, bits)

    agg = NoRecovery().combine([UPDATES[i] for i in (0, 2, 3)], None)
    with pytest.raises(ProtectionError, match="exceeds"):
        MASK.decode_aggregate(agg, CTXS[0])


def test_blob_sizes_depend_only_on_the_shape_and_width():
    """Dense: a zero matrix, a sparse one and an all-max one give updates, recoveries and aggregates of one size."""
    ctxs = contexts(SHAPE, parties=4, max_value=300)
    meta = MASK.session_meta(ctxs[0])
    bits = meta["mask_bits"]
    assert bits == (4 * 300).bit_length() + 1 == 12
    size = HEADER.size + packed_size(SHAPE[0] * SHAPE[1], bits)
    for mat in (np.zeros(SHAPE, np.int64), MATS[0], np.full(SHAPE, 300)):
        updates = [MASK.encode_update(mat, c) for c in ctxs]
        assert {len(u) for u in updates} == {size}
        agg = MASK.combine(updates, view(meta, [0, 1, 2, 3], parties=4))
        assert len(agg) == size + 2 + 2 * 4  # + the contributor list
    assert len(mask_recovery([2], ctxs[0])) == size + 2 + 2 * 1


def test_the_largest_possible_sum_does_not_wrap():
    """Every party at max_value in every cell: the sum P * max_value < 2^(b-1) comes back exactly."""
    for parties, max_value in ((4, 1), (4, 300), (3, 2**15), (2, (1 << 31) - 1)):
        ctxs = contexts((6, 5), parties=parties, max_value=max_value)
        meta = MASK.session_meta(ctxs[0])
        assert parties * max_value < 2 ** (meta["mask_bits"] - 1)
        full = np.full((6, 5), max_value, dtype=np.int64)
        agg = MASK.combine([MASK.encode_update(full, c) for c in ctxs], view(meta, list(range(parties)),
                                                                             parties=parties))
        assert np.array_equal(MASK.decode_aggregate(agg, ctxs[1]), full * parties)
        with pytest.raises(ProtectionError, match="outside"):
            MASK.encode_update(full + 1, ctxs[0])
