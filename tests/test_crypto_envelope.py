"""Channel envelope: wrapped channel keys per reader, AES-GCM sealed chunks bound to their position."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.crypto.envelope import (
    SEAL_OVERHEAD_BYTES,
    WRAPPED_KEY_BYTES,
    new_channel_key,
    open_sealed,
    seal,
    unwrap_channel_key,
    wrap_channel_key,
)
from fedtopic.crypto.keys import generate_party_keys
from fedtopic.errors import CryptoError, DecryptionError

READER = generate_party_keys("p2", seed=b"envelope-tests")
OUTSIDER = generate_party_keys("p9", seed=b"envelope-tests")
POS = dict(channel="p1", round=7, chunk=1, n_chunks=3)


def test_wrap_unwrap_for_each_reader_and_outsider_fails():
    key = new_channel_key()
    readers = [generate_party_keys(f"p{i}", seed=b"x") for i in range(1, 4)]
    for reader in readers:
        wrapped = wrap_channel_key(key, reader.x25519_public, channel="p1", epoch=2)
        assert len(wrapped) == WRAPPED_KEY_BYTES
        assert unwrap_channel_key(wrapped, reader.x25519_private_key, channel="p1", epoch=2) == key
        with pytest.raises(DecryptionError) as err:
            unwrap_channel_key(wrapped, OUTSIDER.x25519_private_key, channel="p1", epoch=2)
        assert str(err.value) == "cannot decrypt: wrong key or corrupted data"


def test_wrapping_is_randomised():
    key = new_channel_key()
    a = wrap_channel_key(key, READER.x25519_public, channel="p1", epoch=0)
    b = wrap_channel_key(key, READER.x25519_public, channel="p1", epoch=0)
    assert a != b and key not in a


@pytest.mark.parametrize("channel, epoch", [("p2", 2), ("p1", 3), ("p1x", 2)])
def test_unwrap_bound_to_channel_and_epoch(channel, epoch):
    wrapped = wrap_channel_key(new_channel_key(), READER.x25519_public, channel="p1", epoch=2)
    with pytest.raises(DecryptionError):
        unwrap_channel_key(wrapped, READER.x25519_private_key, channel=channel, epoch=epoch)


def test_tampering_any_byte_of_wrapped_key_fails():
    wrapped = wrap_channel_key(new_channel_key(), READER.x25519_public, channel="p1", epoch=0)
    for i in range(len(wrapped)):
        bad = bytearray(wrapped)
        bad[i] ^= 0x01
        with pytest.raises(DecryptionError):
            unwrap_channel_key(bytes(bad), READER.x25519_private_key, channel="p1", epoch=0)
    for bad in (wrapped[:-1], wrapped + b"\0", b""):
        with pytest.raises(DecryptionError):
            unwrap_channel_key(bad, READER.x25519_private_key, channel="p1", epoch=0)


def test_wrap_rejects_bad_inputs():
    with pytest.raises(CryptoError):
        wrap_channel_key(b"short", READER.x25519_public, channel="p1", epoch=0)
    with pytest.raises(CryptoError):
        wrap_channel_key(new_channel_key(), b"\0" * 31, channel="p1", epoch=0)
    with pytest.raises(CryptoError):  # the all-zero point gives an all-zero shared secret
        wrap_channel_key(new_channel_key(), b"\0" * 32, channel="p1", epoch=0)
    with pytest.raises(CryptoError):
        wrap_channel_key(new_channel_key(), READER.x25519_public, channel="", epoch=0)
    with pytest.raises(CryptoError):
        wrap_channel_key(new_channel_key(), READER.x25519_public, channel="p1", epoch=-1)


def test_seal_open_roundtrip_and_overhead():
    key = new_channel_key()
    blob = seal(key, b"counts", **POS)
    assert len(blob) == len(b"counts") + SEAL_OVERHEAD_BYTES
    assert open_sealed(key, blob, **POS) == b"counts"
    assert seal(key, b"counts", **POS) != blob  # fresh nonce each time


def test_open_with_wrong_key_fails():
    blob = seal(new_channel_key(), b"secret counts", **POS)
    with pytest.raises(DecryptionError):
        open_sealed(new_channel_key(), blob, **POS)


def test_tampering_any_byte_of_sealed_blob_fails():
    key = new_channel_key()
    blob = seal(key, b"0123456789abcdef", **POS)
    for i in range(len(blob)):
        for flip in (0x01, 0x80):
            bad = bytearray(blob)
            bad[i] ^= flip
            with pytest.raises(DecryptionError):
                open_sealed(key, bytes(bad), **POS)
    for cut in range(len(blob)):
        with pytest.raises(DecryptionError):
            open_sealed(key, blob[:cut], **POS)
    with pytest.raises(DecryptionError):
        open_sealed(key, blob + b"\0", **POS)


@pytest.mark.parametrize(
    "change",
    [{"channel": "p2"}, {"round": 8}, {"round": 6}, {"chunk": 0}, {"chunk": 2}, {"n_chunks": 2}, {"n_chunks": 4}],
)
def test_aad_binds_channel_round_chunk(change):
    key = new_channel_key()
    blob = seal(key, b"payload", **POS)
    with pytest.raises(DecryptionError):
        open_sealed(key, blob, **{**POS, **change})


def test_seal_rejects_bad_positions():
    key = new_channel_key()
    for bad in ({"chunk": 3}, {"n_chunks": 0, "chunk": 0}, {"round": -1}, {"chunk": True}):
        with pytest.raises(CryptoError):
            seal(key, b"x", **{**POS, **bad})
    with pytest.raises(CryptoError):
        seal(b"\0" * 16, b"x", **POS)


@settings(max_examples=60, deadline=None)
@given(
    plaintext=st.binary(max_size=2048),
    channel=st.text(min_size=1, max_size=40),
    round_=st.integers(0, 2**64 - 1),
    n_chunks=st.integers(1, 2**32 - 1),
    data=st.data(),
)
def test_seal_roundtrip_property(plaintext, channel, round_, n_chunks, data):
    chunk = data.draw(st.integers(0, n_chunks - 1))
    key = new_channel_key()
    blob = seal(key, plaintext, channel=channel, round=round_, chunk=chunk, n_chunks=n_chunks)
    assert open_sealed(key, blob, channel=channel, round=round_, chunk=chunk, n_chunks=n_chunks) == plaintext


@settings(max_examples=30, deadline=None)
@given(channel=st.text(min_size=1, max_size=40), epoch=st.integers(0, 2**64 - 1), seed=st.binary(max_size=16))
def test_wrap_roundtrip_property(channel, epoch, seed):
    reader = generate_party_keys("r", seed=seed)
    key = new_channel_key()
    wrapped = wrap_channel_key(key, reader.x25519_public, channel=channel, epoch=epoch)
    assert unwrap_channel_key(wrapped, reader.x25519_private_key, channel=channel, epoch=epoch) == key
