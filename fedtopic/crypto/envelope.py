"""Channel envelope encryption: read control on an EVM chain is cryptographic.

Every byte on an EVM chain is public, so a channel's payloads are sealed with
the channel's AES-256-GCM key, and that key is *wrapped* for each authorised
reader's X25519 public key (ephemeral-static ECDH + HKDF-SHA256, HPKE-style);
revoking a reader means a new key epoch. See DESIGN.md "MCACS on an EVM chain"
and the paper's Def. 4 (CP matrix).

Formats (all fixed-size fields, big-endian integers):

- wrapped key (81 bytes): version(1) | ephemeral X25519 public(32) | AES-GCM(channel key)(32 + 16 tag).
  HKDF-SHA256(ikm = ECDH secret, salt = eph_pub | reader_pub,
  info = label | channel | epoch) -> 32-byte wrap key + 12-byte nonce; both are
  single-use because the ephemeral key is fresh. The same info is the AAD.
- sealed payload: version(1) | random nonce(12) | AES-GCM ciphertext + tag(16);
  the AAD binds channel, round, chunk and n_chunks, so a chunk cannot be
  replayed into another channel, round or position.

Any failure to open or unwrap raises ``DecryptionError`` with one opaque
message. Encoding the counts is ``codec``'s job, not this module's.
"""

from __future__ import annotations

import os
import struct

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fedtopic.crypto.ecies import open_with_private, seal_to_public
from fedtopic.errors import CryptoError, DecryptionError

CHANNEL_KEY_BYTES = 32
WRAP_VERSION = 1
SEAL_VERSION = 1
WRAPPED_KEY_BYTES = 1 + 32 + CHANNEL_KEY_BYTES + 16
SEAL_OVERHEAD_BYTES = 1 + 12 + 16
_WRAP_LABEL = b"fedtopic/channel-key-wrap/v1\x00"
_SEAL_LABEL = b"fedtopic/channel-payload/v1\x00"
_OPAQUE = "cannot decrypt: wrong key or corrupted data"


def _channel_bytes(channel: str) -> bytes:
    if not isinstance(channel, str) or not channel:
        raise CryptoError("channel must be a non-empty string")
    raw = channel.encode("utf-8")
    if len(raw) > 255:
        raise CryptoError("channel name is longer than 255 bytes")
    return bytes([len(raw)]) + raw


def _check_uint(name: str, value: int, bits: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < (1 << bits):
        raise CryptoError(f"{name} must be an integer in [0, 2^{bits})")


def _check_channel_key(channel_key: bytes) -> None:
    if not isinstance(channel_key, bytes) or len(channel_key) != CHANNEL_KEY_BYTES:
        raise CryptoError(f"channel key must be {CHANNEL_KEY_BYTES} bytes")


def new_channel_key() -> bytes:
    """A fresh random AES-256 channel key."""
    return AESGCM.generate_key(bit_length=256)


def _wrap_info(channel: str, epoch: int) -> bytes:
    _check_uint("epoch", epoch, 64)
    return _WRAP_LABEL + _channel_bytes(channel) + struct.pack(">Q", epoch)


def wrap_channel_key(channel_key: bytes, reader_public: bytes, *, channel: str, epoch: int) -> bytes:
    """Encrypt ``channel_key`` so only the holder of ``reader_public``'s private key can read it (81 bytes)."""
    _check_channel_key(channel_key)
    return seal_to_public(channel_key, reader_public, info=_wrap_info(channel, epoch), version=WRAP_VERSION)


def unwrap_channel_key(wrapped: bytes, reader_private: bytes, *, channel: str, epoch: int) -> bytes:
    """Recover the channel key wrapped for this reader; DecryptionError on any mismatch or tampering."""
    info = _wrap_info(channel, epoch)
    if isinstance(wrapped, bytes) and len(wrapped) != WRAPPED_KEY_BYTES:
        raise DecryptionError(_OPAQUE)
    return open_with_private(wrapped, reader_private, info=info, version=WRAP_VERSION, opaque=_OPAQUE)


def _seal_aad(channel: str, round: int, chunk: int, n_chunks: int) -> bytes:
    _check_uint("round", round, 64)
    _check_uint("chunk", chunk, 32)
    _check_uint("n_chunks", n_chunks, 32)
    if not chunk < n_chunks:
        raise CryptoError(f"chunk {chunk} is out of range for n_chunks={n_chunks}")
    return _SEAL_LABEL + _channel_bytes(channel) + struct.pack(">QII", round, chunk, n_chunks)


def seal(channel_key: bytes, plaintext: bytes, *, channel: str, round: int, chunk: int, n_chunks: int) -> bytes:
    """Encrypt one payload chunk under the channel key, bound to (channel, round, chunk, n_chunks)."""
    _check_channel_key(channel_key)
    aad = _seal_aad(channel, round, chunk, n_chunks)
    if not isinstance(plaintext, (bytes, bytearray, memoryview)):
        raise CryptoError("plaintext must be bytes")
    nonce = os.urandom(12)
    return bytes([SEAL_VERSION]) + nonce + AESGCM(channel_key).encrypt(nonce, bytes(plaintext), aad)


def open_sealed(channel_key: bytes, blob: bytes, *, channel: str, round: int, chunk: int, n_chunks: int) -> bytes:
    """Decrypt a chunk made by ``seal`` with the same binding; DecryptionError on any mismatch or tampering."""
    _check_channel_key(channel_key)
    aad = _seal_aad(channel, round, chunk, n_chunks)
    if not isinstance(blob, bytes) or len(blob) < SEAL_OVERHEAD_BYTES or blob[0] != SEAL_VERSION:
        raise DecryptionError(_OPAQUE)
    try:
        return AESGCM(channel_key).decrypt(blob[1:13], blob[13:], aad)
    except InvalidTag:
        raise DecryptionError(_OPAQUE) from None
