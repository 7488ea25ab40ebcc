"""Getting the consortium's secrets to the parties and never to the aggregator (paper §6.1 step 1).

One party (the one launching the federation) generates the Paillier key pair
and, for ``mask``, a 32-byte consortium mask secret. Each secret is sealed for
every other party's X25519 public key from the consortium config
(``seal_for_reader``: ephemeral-static X25519, HKDF-SHA256, AES-256-GCM, the
same construction as ``envelope.wrap_channel_key`` but for any bytes) and may
then travel through the aggregator or the chain: only the addressee can open
it. The HKDF info and the AEAD's associated data bind the purpose, the session
and the reader's key, so a sealed secret cannot be replayed for another use.
A received Paillier key is checked against the session's public key, a mask
secret against the public commitment in the session meta.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from fedtopic.crypto.ecies import open_with_private, seal_to_public
from fedtopic.crypto.paillier import (
    PaillierPrivateKey,
    PaillierPublicKey,
    private_key_from_bytes,
    private_key_to_bytes,
)
from fedtopic.crypto.protect.mask import secret_commitment
from fedtopic.errors import CryptoError

SEAL_VERSION = 1
MASK_SECRET_BYTES = 32
_LABEL = b"fedtopic/sealed-for-reader/v1\x00"
_OPAQUE = "cannot open the sealed secret: wrong key, purpose, session or corrupted data"


def _info(purpose: str, context: bytes) -> bytes:
    raw = purpose.encode("utf-8")
    if not raw or len(raw) > 255 or len(context) > 65535:
        raise CryptoError("seal: purpose must be 1-255 bytes and context at most 65535")
    return _LABEL + bytes([len(raw)]) + raw + len(context).to_bytes(2, "big") + context


def seal_for_reader(data: bytes, reader_public: bytes, *, purpose: str, context: bytes = b"") -> bytes:
    """``data`` encrypted so only the holder of ``reader_public``'s X25519 private key can open it."""
    return seal_to_public(data, reader_public, info=_info(purpose, context), version=SEAL_VERSION)


def open_for_reader(sealed: bytes, reader_private: bytes, *, purpose: str, context: bytes = b"") -> bytes:
    """Inverse of ``seal_for_reader``; DecryptionError (opaque) on any mismatch or tampering."""
    return open_with_private(sealed, reader_private, info=_info(purpose, context), version=SEAL_VERSION, opaque=_OPAQUE)


def _seal_all(data: bytes, recipients: Mapping[str, bytes], purpose: str, session: str) -> dict[str, bytes]:
    if not recipients:
        raise CryptoError("no recipients to share the secret with")
    return {pid: seal_for_reader(data, pub, purpose=purpose, context=session.encode("utf-8"))
            for pid, pub in recipients.items()}  # fmt: skip


def share_paillier_secret(private: PaillierPrivateKey, recipients: Mapping[str, bytes], *,
                          session: str) -> dict[str, bytes]:  # fmt: skip
    """The Paillier secret key sealed for each party id -> X25519 public key (send each its own, never to others)."""
    return _seal_all(private_key_to_bytes(private), recipients, "paillier-secret-key", session)


def receive_paillier_secret(sealed: bytes, reader_private: bytes, *, session: str,
                            public: PaillierPublicKey) -> PaillierPrivateKey:  # fmt: skip
    """Open a sealed Paillier secret key and check that it belongs to the session's ``public`` key."""
    raw = open_for_reader(sealed, reader_private, purpose="paillier-secret-key", context=session.encode("utf-8"))
    private = private_key_from_bytes(raw)
    if private.public_key.n != public.n:
        raise CryptoError("the received Paillier secret key does not match the session's public key")
    return private


def new_mask_secret() -> bytes:
    """A fresh consortium mask secret (32 random bytes)."""
    return os.urandom(MASK_SECRET_BYTES)


def share_mask_secret(secret: bytes, recipients: Mapping[str, bytes], *, session: str) -> dict[str, bytes]:
    """The consortium mask secret sealed for each party id -> X25519 public key."""
    if not isinstance(secret, bytes) or len(secret) != MASK_SECRET_BYTES:
        raise CryptoError(f"the mask secret must be {MASK_SECRET_BYTES} bytes")
    return _seal_all(secret, recipients, "mask-secret", session)


def receive_mask_secret(sealed: bytes, reader_private: bytes, *, session: str, commitment: str | None = None) -> bytes:
    """Open a sealed mask secret; if ``commitment`` (meta["mask_commitment"]) is given, check it matches."""
    secret = open_for_reader(sealed, reader_private, purpose="mask-secret", context=session.encode("utf-8"))
    if len(secret) != MASK_SECRET_BYTES or (commitment is not None and secret_commitment(secret) != commitment):
        raise CryptoError("the received mask secret does not match the session's commitment")
    return secret
