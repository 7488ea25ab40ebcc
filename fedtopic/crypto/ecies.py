"""Sealing bytes to one reader's X25519 public key (ephemeral-static ECDH, HKDF-SHA256, AES-256-GCM).

Format: version(1) | ephemeral X25519 public(32) | AES-GCM ciphertext + tag(16).
HKDF(ikm = ECDH secret, salt = eph_pub | reader_pub, info) gives a single-use
32-byte key and 12-byte nonce (the ephemeral key is fresh every time); ``info``
is also the AAD, so callers bind purpose and context through it. Used for
channel keys (``envelope``) and for consortium secrets (``protect.keyshare``).
"""

from __future__ import annotations

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import (
    X25519PrivateKey,
    X25519PublicKey,
)
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from fedtopic.errors import CryptoError, DecryptionError

OVERHEAD_BYTES = 1 + 32 + 16


def _key_and_nonce(shared: bytes, eph_pub: bytes, reader_pub: bytes, info: bytes) -> tuple[bytes, bytes]:
    okm = HKDF(algorithm=hashes.SHA256(), length=44, salt=eph_pub + reader_pub, info=info).derive(shared)
    return okm[:32], okm[32:]


def seal_to_public(data: bytes, reader_public: bytes, *, info: bytes, version: int) -> bytes:
    """``data`` readable only by the holder of ``reader_public``'s private key."""
    if not isinstance(reader_public, bytes) or len(reader_public) != 32:
        raise CryptoError("reader public key must be 32 bytes")
    ephemeral = X25519PrivateKey.generate()
    eph_pub = ephemeral.public_key().public_bytes_raw()
    try:
        shared = ephemeral.exchange(X25519PublicKey.from_public_bytes(reader_public))
    except ValueError:
        raise CryptoError("reader public key is not a usable X25519 key") from None
    key, nonce = _key_and_nonce(shared, eph_pub, reader_public, info)
    return bytes([version]) + eph_pub + AESGCM(key).encrypt(nonce, bytes(data), info)


def open_with_private(sealed: bytes, reader_private: bytes, *, info: bytes, version: int, opaque: str) -> bytes:
    """Inverse of ``seal_to_public``; ``DecryptionError(opaque)`` on any mismatch or tampering."""
    if not isinstance(reader_private, bytes) or len(reader_private) != 32:
        raise CryptoError("reader private key must be 32 bytes")
    if not isinstance(sealed, bytes) or len(sealed) < OVERHEAD_BYTES or sealed[0] != version:
        raise DecryptionError(opaque)
    private = X25519PrivateKey.from_private_bytes(reader_private)
    eph_pub = sealed[1:33]
    try:
        shared = private.exchange(X25519PublicKey.from_public_bytes(eph_pub))
        key, nonce = _key_and_nonce(shared, eph_pub, private.public_key().public_bytes_raw(), info)
        return AESGCM(key).decrypt(nonce, sealed[33:], info)
    except (ValueError, InvalidTag):
        raise DecryptionError(opaque) from None
