"""The aggregator-side ``validate``/``combine`` refuse every malformed, misplaced or replayed update."""

import numpy as np
import pytest
from _protect_setup import contexts, random_counts, view
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.crypto.codec import encode_counts
from fedtopic.crypto.protect import PROTECTIONS, InvalidUpdate, ProtectionError
from fedtopic.crypto.protect.base import HEADER
from fedtopic.errors import FedTopicError

SHAPE = (16, 4)
RNG = np.random.default_rng(11)
MAT = random_counts(RNG, SHAPE, 80)
CTXS = contexts(SHAPE, delta=0.25)
SETUP = {}
for _name, _scheme in PROTECTIONS.items():
    SETUP[_name] = (_scheme.session_meta(CTXS[0]), _scheme.encode_update(MAT, CTXS[0]))
NAMES = sorted(PROTECTIONS)


@pytest.mark.parametrize("name", NAMES)
def test_a_good_update_passes(name):
    meta, payload = SETUP[name]
    PROTECTIONS[name].validate(payload, meta, round=1, session="sess-1")


@pytest.mark.parametrize("name", NAMES)
def test_an_update_naming_another_party_than_its_sender_is_refused(name):
    meta, payload = SETUP[name]  # made by party index 0
    PROTECTIONS[name].validate(payload, meta, round=1, session="sess-1", sender=0)
    with pytest.raises(InvalidUpdate, match="names party index 0, but its sender is party index 1"):
        PROTECTIONS[name].validate(payload, meta, round=1, session="sess-1", sender=1)


@pytest.mark.parametrize("name", NAMES)
def test_wrong_round_session_scheme_or_shape_is_refused(name):
    scheme = PROTECTIONS[name]
    meta, payload = SETUP[name]
    with pytest.raises(InvalidUpdate, match="round 1, this is round 2"):
        scheme.validate(payload, meta, round=2)
    with pytest.raises(InvalidUpdate, match="another session"):
        scheme.validate(payload, meta, session="other")
    with pytest.raises(InvalidUpdate, match="shape"):
        scheme.validate(payload, {**meta, "shape": [SHAPE[0] + 1, SHAPE[1]]})
    other = next(n for n in NAMES if n != name)
    with pytest.raises(InvalidUpdate, match="protected with"):
        scheme.validate(SETUP[other][1], meta)
    with pytest.raises(InvalidUpdate, match="round"):  # combine checks the round it closes
        scheme.combine([payload], view(meta, [0], round=5))


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_truncated_or_corrupted_updates_are_refused_cleanly(name, data):
    scheme = PROTECTIONS[name]
    meta, payload = SETUP[name]
    cut = data.draw(st.integers(0, len(payload) - 1))
    with pytest.raises(InvalidUpdate):
        scheme.validate(payload[:cut], meta)
    with pytest.raises(InvalidUpdate):
        scheme.validate(payload + b"\x00", meta)
    pos = data.draw(st.integers(0, HEADER.size - 1))
    flipped = bytearray(payload)
    flipped[pos] ^= data.draw(st.integers(1, 255))
    try:  # a header flip may land on a field validate cannot know (e.g. an in-range party index)
        scheme.validate(bytes(flipped), meta, round=1, session="sess-1")
    except InvalidUpdate:
        pass
    junk = data.draw(st.binary(max_size=200))
    with pytest.raises(InvalidUpdate):
        scheme.validate(junk, meta)


@pytest.mark.parametrize("name", NAMES)
def test_negative_or_oversized_counts_never_leave_the_party(name):
    bad = MAT.astype(np.int64).copy()
    bad[3, 1] = -1
    with pytest.raises(ProtectionError, match="word 3, topic 1"):
        PROTECTIONS[name].encode_update(bad, CTXS[0])
    with pytest.raises(ProtectionError, match="shape"):
        PROTECTIONS[name].encode_update(MAT[:-1], CTXS[0])
    with pytest.raises(ProtectionError, match="outside"):
        PROTECTIONS[name].encode_update(MAT + 1000, CTXS[0])


def test_plaintext_in_a_protected_row_is_refused():
    meta, payload = SETUP["paillier-iphe"]
    leaked = MAT.copy()
    leaked[meta["rows"][0], 0] = 9
    codec_start = len(payload) - len(encode_counts(_rest(MAT, meta)))
    forged = payload[:codec_start] + encode_counts(leaked)
    with pytest.raises(InvalidUpdate, match=f"protected word {meta['rows'][0]} appears in the clear"):
        PROTECTIONS["paillier-iphe"].validate(forged, meta)


def _rest(mat, meta):
    rest = mat.copy()
    rest[meta["rows"]] = 0
    return rest


def test_ciphertext_out_of_range_is_refused():
    meta, payload = SETUP["paillier-packed"]
    forged = payload[:HEADER.size + 4] + b"\xff" * 256 + payload[HEADER.size + 4 + 256:]
    with pytest.raises(InvalidUpdate, match="out of range"):
        PROTECTIONS["paillier-packed"].validate(forged, meta)


@pytest.mark.parametrize("name", NAMES)
def test_an_update_filed_under_another_party_is_refused(name):
    meta, payload = SETUP[name]  # party 0's update
    with pytest.raises(InvalidUpdate, match="filed under party index 1"):
        PROTECTIONS[name].combine([payload], view(meta, [1]))


@pytest.mark.parametrize("bad", [{"shape": [0, 3]}, {"shape": "16x4"}, {"rows": [3, 1]}, {"rows": [99]},
                                 {"packed": "yes"}, {"parties": 0}, {"paillier_n": "zz"}])  # fmt: skip
def test_bad_paillier_meta_is_refused(bad):
    meta, _ = SETUP["paillier-iphe"]
    with pytest.raises(InvalidUpdate):
        PROTECTIONS["paillier-iphe"].check_meta({**meta, **bad})


def test_bad_mask_meta_is_refused():
    meta, _ = SETUP["mask"]
    want = meta["mask_bits"]
    assert want == (meta["parties"] * meta["max_value"]).bit_length() + 1
    for bits in (want - 1, want + 1, 64):
        with pytest.raises(InvalidUpdate, match=f"mask_bits must be {want}"):
            PROTECTIONS["mask"].check_meta({**meta, "mask_bits": bits})
    with pytest.raises(InvalidUpdate, match="mask_bits must be an integer"):
        PROTECTIONS["mask"].check_meta({**meta, "mask_bits": 65})


def test_decoding_with_the_wrong_secret_fails_loudly():
    from dataclasses import replace

    ctxs = contexts(SHAPE)
    for name, secret in (("mask", {"mask_secret": bytes(32)}),):
        scheme = PROTECTIONS[name]
        meta = scheme.session_meta(ctxs[0])
        agg = scheme.combine([scheme.encode_update(MAT, c) for c in ctxs], view(meta, [0, 1, 2]))
        with pytest.raises(FedTopicError, match="exceeds"):
            scheme.decode_aggregate(agg, replace(ctxs[0], **secret))


class _NetPayloadError(Exception):
    pass


class _NetMetaError(Exception):
    pass


def test_adapter_maps_errors_to_the_network_types_and_passes_recovery_through():
    from fedtopic.crypto.protect import CombinerAdapter, RecoveryNeeded

    adapters = {n: CombinerAdapter(s, invalid_payload=_NetPayloadError, invalid_meta=_NetMetaError)
                for n, s in PROTECTIONS.items()}  # fmt: skip
    meta, payload = SETUP["mask"]
    adapters["mask"].validate(payload, meta)
    with pytest.raises(_NetPayloadError, match="truncated"):
        adapters["mask"].validate(payload[:10], meta)
    with pytest.raises(_NetMetaError, match="shape"):
        adapters["mask"].check_meta({})
    with pytest.raises(RecoveryNeeded):
        adapters["mask"].combine([payload], view(meta, [0]))
    with pytest.raises(_NetPayloadError, match="round"):
        adapters["none"].combine([SETUP["none"][1]], view(SETUP["none"][0], [0], round=3))


def test_a_scheme_outside_every_table_gets_a_wire_code_from_its_name():
    """Wire headers name schemes openly (issue 65): a plugin scheme's header packs without a table entry (before:
    KeyError), the built-ins keep the codes the wire has always carried, and another scheme's header is refused."""
    from fedtopic.crypto.protect.base import (
        UPDATE_MAGIC,
        check_header,
        pack_header,
        scheme_code,
        unpack_header,
    )

    assert [scheme_code(n) for n in ("none", "paillier-iphe", "paillier-uphe", "paillier-packed", "mask")] == [1, 2, 3,
                                                                                                            4, 5]
    assert 6 <= scheme_code("zsum") <= 255 and scheme_code("zsum") == scheme_code("zsum")
    head, body = unpack_header(pack_header(UPDATE_MAGIC, "zsum", 2, 7, (16, 4), "s") + b"x", UPDATE_MAGIC)
    assert body == b"x" and (head.who, head.round, head.shape) == (2, 7, (16, 4))
    check_header(head, "zsum", (16, 4), round=7, session="s", sender=2)
    with pytest.raises(InvalidUpdate, match="session uses 'mask'"):
        check_header(head, "mask", (16, 4), round=7, session="s")
    masked, _ = unpack_header(pack_header(UPDATE_MAGIC, "mask", 0, 7, (16, 4), "s"), UPDATE_MAGIC)
    with pytest.raises(InvalidUpdate, match="protected with 'mask', the session uses 'zsum'"):
        check_header(masked, "zsum", (16, 4), round=7, session="s")
