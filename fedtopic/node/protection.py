"""A party's side of update protection: encode an update, decode an aggregate, mask recovery, and the shared secrets.

``PartyProtection`` puts one ``aggregator.protection`` scheme and the party's
``ProtectionContext`` behind three calls the training loop needs. For
``none`` the party sends the network's bare count codec (the aggregator's
``none`` combiner; the update signature already binds session and round).

Secrets (paper §6.1 step 1): the launching party (first in the consortium
file) generates the Paillier key pair (``aggregator.key_bits``) or the mask
secret and seals it for every party's X25519 key, itself included; the sealed
blobs travel as the setup session's params, so the aggregator only stores
opaque bytes it cannot open, and a restarted launcher reads its own back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from fedtopic.crypto.codec import decode_counts, encode_counts
from fedtopic.crypto.keys import PartyKeys
from fedtopic.crypto.paillier import (
    PaillierPrivateKey,
    PaillierPublicKey,
    generate_paillier_keys,
    public_key_from_hex,
)
from fedtopic.crypto.protect import (
    PROTECTIONS,
    ObfuscatorPool,
    ProtectionContext,
    mask_recovery,
    new_mask_secret,
    receive_mask_secret,
    receive_paillier_secret,
    share_mask_secret,
    share_paillier_secret,
)
from fedtopic.crypto.protect.mask import secret_commitment
from fedtopic.crypto.protect.paillier_rows import parse_rows_meta
from fedtopic.errors import ConfigError, CryptoError, TrainingError
from fedtopic.network.client import AggregatorClient
from fedtopic.network.errors import AggregatorRejected

PAILLIER = ("paillier-iphe", "paillier-uphe", "paillier-packed")
SETUP_MAX_VALUE = (1 << 24) - 1
"""Bound on one party's frequency of one word in the ranking exchange (packed slots are sized for P times it)."""


def setup_protection(protection: str) -> str:
    """The scheme that protects the word-frequency exchange: packed Paillier for the Paillier schemes."""
    return "paillier-packed" if protection in PAILLIER else protection


@dataclass(frozen=True)
class Secrets:
    """What the launcher shares: the Paillier key pair and/or the mask secret (None where unused)."""

    paillier_public: PaillierPublicKey | None = None
    paillier_private: PaillierPrivateKey | None = None
    mask_secret: bytes | None = None


def new_secrets(protection: str, key_bits: int) -> Secrets:
    """Fresh consortium secrets for ``protection`` (launcher only)."""
    if protection in PAILLIER:
        pair = generate_paillier_keys(key_bits)
        return Secrets(pair.public, pair.private)
    if protection == "mask":
        return Secrets(mask_secret=new_mask_secret())
    return Secrets()


def sealed_params(secrets: Secrets, recipients: Mapping[str, bytes], session: str) -> dict[str, str]:
    """Session params carrying the secrets sealed for each party id -> X25519 public key."""
    out: dict[str, str] = {}
    if secrets.paillier_private is not None:
        sealed = share_paillier_secret(secrets.paillier_private, recipients, session=session)
        out |= {f"paillier_secret_{pid}": blob.hex() for pid, blob in sealed.items()}
    if secrets.mask_secret is not None:
        sealed = share_mask_secret(secrets.mask_secret, recipients, session=session)
        out |= {f"mask_secret_{pid}": blob.hex() for pid, blob in sealed.items()}
        out["mask_commitment"] = secret_commitment(secrets.mask_secret)
    return out


def open_secrets(protection: str, meta: Mapping[str, Any], params: Mapping[str, Any], party_id: str,
                 x25519_private: bytes, session: str, key_bits: int) -> Secrets:
    """This party's secrets from the setup session (checked against its public key / commitment)."""
    try:
        if protection in PAILLIER:
            public = public_key_from_hex(meta.get("paillier_n"))
            if public.n.bit_length() < key_bits - 8:
                raise ConfigError(f"the session's Paillier key has {public.n.bit_length()} bits, the config asks "
                                  f"for {key_bits}")
            private = receive_paillier_secret(bytes.fromhex(str(params[f"paillier_secret_{party_id}"])),
                                              x25519_private, session=session, public=public)
            return Secrets(public, private)
        if protection == "mask":
            secret = receive_mask_secret(bytes.fromhex(str(params[f"mask_secret_{party_id}"])), x25519_private,
                                         session=session, commitment=str(params.get("mask_commitment")))
            return Secrets(mask_secret=secret)
    except KeyError:
        raise ConfigError(f"setup session {session!r} carries no sealed secret for party {party_id!r}") from None
    except ValueError:
        raise CryptoError(f"setup session {session!r}: a sealed secret is not hex") from None
    return Secrets()


class PartyProtection:
    """``protection`` applied with ``ctx`` (its ``round`` is replaced per call)."""

    def __init__(self, protection: str, ctx: ProtectionContext, *, pool: bool = False) -> None:
        self.name = protection
        self._pool = None
        if pool and protection in PAILLIER and ctx.paillier_public is not None:
            self._pool = ObfuscatorPool(ctx.paillier_public, ctx.paillier_private)
            ctx = replace(ctx, obfuscators=self._pool)
        self.ctx = ctx
        self.scheme = PROTECTIONS[protection]
        self.meta: dict[str, Any] = {"shape": list(ctx.shape)} if protection == "none" else \
            self.scheme.session_meta(ctx)

    def prefill(self, count: int) -> None:
        """Compute ``count`` Paillier obfuscators in the background (during the Gibbs sweep); no-op otherwise."""
        if self._pool is not None:
            self._pool.prefill(count)

    @property
    def ciphertexts_per_update(self) -> int:
        """Paillier ciphertexts in one update (0 for unencrypted schemes)."""
        if self.name not in PAILLIER:
            return 0
        return parse_rows_meta(self.meta).n_ciphertexts

    def close(self) -> None:
        """Stop the obfuscator workers."""
        if self._pool is not None:
            self._pool.close()

    def _at(self, round: int) -> ProtectionContext:
        return replace(self.ctx, round=round)

    def encode(self, n_wk: np.ndarray, round: int) -> bytes:
        """The protected update of N_p (int, V x K) for aggregator round ``round``."""
        if self.name == "none":
            return encode_counts(np.asarray(n_wk))
        if self.name in PAILLIER:
            return self.scheme.encode_update(n_wk, self._at(round), self.meta)  # type: ignore[call-arg]
        return self.scheme.encode_update(n_wk, self._at(round))

    def decode(self, blob: bytes, round: int) -> np.ndarray:
        """N_Σ (int64, V x K) from the aggregate of ``round``."""
        if self.name == "none":
            return decode_counts(blob, expected_shape=self.ctx.shape).astype(np.int64)
        if self.name in PAILLIER:
            return self.scheme.decode_aggregate(blob, self._at(round), self.meta)  # type: ignore[call-arg]
        return self.scheme.decode_aggregate(blob, self._at(round))

    def recovery(self, dropped: list[int], round: int) -> bytes:
        """The mask recovery message for ``round`` that lost the parties at ``dropped`` (session indices)."""
        if self.name != "mask":
            raise CryptoError(f"protection {self.name!r} has no recovery messages")
        return mask_recovery(dropped, self._at(round))


def sealed_session(client: AggregatorClient, ids: Sequence[str], keys: PartyKeys, publics: Sequence[bytes], *,
                   protection: str, key_bits: int, params: Mapping[str, Any], timeout: float,
                   spec: Callable[[Secrets], tuple[str, dict[str, Any]]]) -> Secrets:
    """Join ``client``'s session, whose params carry the consortium's secrets sealed for every party (§6.1 step 1).

    The launcher (first of ``ids``) generates fresh secrets for ``protection`` and opens the session with the
    combiner and meta ``spec(secrets)`` gives and ``params`` plus the sealed blobs (a restarted launcher finds
    its session and opens its own copy). The others wait for it (up to ``timeout`` s), open their copy, and
    check that the session's meta and params are the ones they derive: another consortium, vocabulary or option
    is refused in one line naming what differs."""
    index = list(ids).index(keys.party_id)
    until = time.monotonic() + timeout
    while True:
        try:
            info = client.session_info()
            break
        except AggregatorRejected as exc:
            if exc.code != "unknown_session":
                raise
        if index == 0:
            secrets = new_secrets(protection, key_bits)
            combiner, meta = spec(secrets)
            client.open_session(ids, combiner=combiner, meta=meta,
                                params=dict(params) | sealed_params(secrets, dict(zip(ids, publics)), client.session))
            return secrets
        if time.monotonic() > until:
            raise TrainingError(f"session {client.session!r} was not opened by {ids[0]} within {timeout:.0f} s")
        time.sleep(0.2)
    secrets = open_secrets(protection, info.meta, info.params, keys.party_id, keys.x25519_private_key,
                           client.session, key_bits)
    differ = sorted(k for k, v in params.items() if info.params.get(k) != v)
    if spec(secrets)[1] != info.meta or differ:
        what = ", ".join(f"{k} {info.params.get(k)!r} (this party: {params[k]!r})" for k in differ) or "its meta"
        sealed = {k: v for k, v in info.params.items() if k not in params}
        try:  # asked with our own params, the aggregator records the refusal: the others stop instead of waiting
            client.open_session(ids, combiner=info.combiner, meta=spec(secrets)[1], params=dict(params) | sealed,
                                straggler_deadline_seconds=info.straggler_deadline_seconds)
        except AggregatorRejected as exc:
            if exc.code != "session_conflict":
                raise
        raise ConfigError(f"session {client.session!r} was opened by {info.created_by} with other settings: {what} "
                          "(if this is a new run of the consortium, start every node with `node run --fresh`)")
    return secrets
