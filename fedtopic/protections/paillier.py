"""The Paillier protections of CSFed-LDA (paper §6.2–6.4, Def. 3, Alg. 2): ``paillier-iphe`` and
``paillier-uphe`` encrypt the ⌈δ·V⌉ most frequent words' rows (of the global or of each party's ranking) and send
the rest in the clear; ``paillier-packed`` encrypts every row, many counts to a plaintext.

The launcher generates the key pair (``aggregator.key_bits``) and seals the private key for every party; the
aggregator only adds ciphertexts. The word-frequency exchange that sets the ranking up always runs under packed
Paillier (``setup``). Counts only: the schemes' slots are sized for non-negative integers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from fedtopic.crypto.paillier import generate_paillier_keys, public_key_from_hex
from fedtopic.crypto.protect import (
    IPHE,
    PACKED,
    UPHE,
    ObfuscatorPool,
    PaillierRowsScheme,
    ProtectionContext,
    ProtectionScheme,
    receive_paillier_secret,
    share_paillier_secret,
)
from fedtopic.crypto.protect.paillier_rows import parse_rows_meta
from fedtopic.errors import ConfigError, CryptoError
from fedtopic.protections.base import Protection, Secrets

_ROWS_SEEN = ("the unprotected rows of every N_p in plaintext, which words are protected, the protected rows only "
              "as Paillier ciphertexts")


class PaillierCodec:
    """A Paillier rows scheme applied with ``ctx``; ``pool``: obfuscators computed in the background."""

    def __init__(self, scheme: PaillierRowsScheme, ctx: ProtectionContext, *, pool: bool = False) -> None:
        self.scheme, self.name = scheme, scheme.name
        self._pool = None
        if pool and ctx.paillier_public is not None:
            self._pool = ObfuscatorPool(ctx.paillier_public, ctx.paillier_private)
            ctx = replace(ctx, obfuscators=self._pool)
        self.ctx = ctx
        self.meta: dict[str, Any] = scheme.session_meta(ctx)

    def encode(self, n_wk: np.ndarray, round: int) -> bytes:
        return self.scheme.encode_update(n_wk, replace(self.ctx, round=round), self.meta)

    def decode(self, blob: bytes, round: int) -> np.ndarray:
        return self.scheme.decode_aggregate(blob, replace(self.ctx, round=round), self.meta)

    def recovery(self, dropped: list[int], round: int) -> bytes:
        raise CryptoError(f"protection {self.name!r} has no recovery messages")

    def prefill(self, count: int) -> None:
        """Compute ``count`` obfuscators in the background (during the Gibbs sweep)."""
        if self._pool is not None:
            self._pool.prefill(count)

    def close(self) -> None:
        """Stop the obfuscator workers."""
        if self._pool is not None:
            self._pool.close()

    @property
    def ciphertexts_per_update(self) -> int:
        return parse_rows_meta(self.meta).n_ciphertexts


class PaillierProtection(Protection):
    """One of the three Paillier schemes; they share secrets and the packed setup exchange."""

    kinds: ClassVar[frozenset[str]] = frozenset({"counts"})

    def __init__(self, scheme: PaillierRowsScheme, summary: str, reveals: str, *, secure_sum: bool = False) -> None:
        self.scheme, self.name, self.summary, self.reveals = scheme, scheme.name, summary, reveals  # type: ignore[misc]
        self.secure_sum = secure_sum  # type: ignore[misc]  # packed: every row encrypted, only the sum decrypted

    def setup(self) -> Protection:
        return PACKED_PROTECTION

    def schemes(self) -> Sequence[ProtectionScheme]:
        return (self.scheme,)

    @property
    def has_secret(self) -> bool:
        return True

    def new_secrets(self, key_bits: int) -> Secrets:
        pair = generate_paillier_keys(key_bits)
        return Secrets(pair.public, pair.private)

    def sealed_params(self, secrets: Secrets, recipients: Mapping[str, bytes], session: str) -> dict[str, str]:
        if secrets.paillier_private is None:
            raise CryptoError(f"{self.name}: no Paillier key to share")
        sealed = share_paillier_secret(secrets.paillier_private, recipients, session=session)
        return {f"paillier_secret_{pid}": blob.hex() for pid, blob in sealed.items()}

    def open_secrets(self, meta: Mapping[str, Any], params: Mapping[str, Any], party_id: str,
                     x25519_private: bytes, session: str, key_bits: int) -> Secrets:
        public = public_key_from_hex(meta.get("paillier_n"))
        if public.n.bit_length() < key_bits - 8:
            raise ConfigError(f"the session's Paillier key has {public.n.bit_length()} bits, the config asks "
                              f"for {key_bits}")
        private = receive_paillier_secret(bytes.fromhex(str(params[f"paillier_secret_{party_id}"])),
                                          x25519_private, session=session, public=public)
        return Secrets(public, private)

    def counts(self, ctx: ProtectionContext, *, pool: bool = False) -> PaillierCodec:
        return PaillierCodec(self.scheme, ctx, pool=pool)


IPHE_PROTECTION = PaillierProtection(IPHE, "Paillier on the δ·V most frequent words of the global ranking (Def. 3)",
                                     _ROWS_SEEN)
UPHE_PROTECTION = PaillierProtection(UPHE, "Paillier on each party's own δ·V most frequent words", _ROWS_SEEN)
PACKED_PROTECTION = PaillierProtection(PACKED, "packed Paillier on every row (δ = 100 %)",
                                       "nothing but sizes (it never holds the Paillier secret)", secure_sum=True)
