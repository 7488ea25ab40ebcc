"""``mask``: pairwise additive masks that cancel in the sum (``fedtopic.crypto.protect.mask``). The aggregator sees
uniform residues, learns only the sum of the updates and who dropped out, and asks the survivors for recovery
messages when a round lost parties. Dense vectors travel as fixed point (two cells a value). A sum of one update
is that update, so a masked round is never released with fewer than two contributors.

The launcher makes the consortium's mask secret and seals it for every party with a commitment in the params.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from fedtopic.crypto.protect import (
    MASK,
    ProtectionContext,
    ProtectionScheme,
    new_mask_secret,
    receive_mask_secret,
    share_mask_secret,
)
from fedtopic.crypto.protect.mask import secret_commitment
from fedtopic.protections.base import PartyCodec, Protection, SchemeCodec, Secrets


class MaskProtection(Protection):
    """``mask``."""

    name: ClassVar[str] = "mask"
    summary: ClassVar[str] = "pairwise additive masks that cancel in the sum (dropouts recovered)"
    kinds: ClassVar[frozenset[str]] = frozenset({"counts", "dense"})
    min_contributors: ClassVar[int] = MASK.min_contributors
    secure_sum: ClassVar[bool] = True
    reveals: ClassVar[str] = "only the sum of the updates and who dropped out"

    def combiner(self, kind: str) -> str:
        return MASK.name

    def schemes(self) -> Sequence[ProtectionScheme]:
        return (MASK,)

    @property
    def has_secret(self) -> bool:
        return True

    def new_secrets(self, key_bits: int) -> Secrets:
        return Secrets(mask_secret=new_mask_secret())

    def sealed_params(self, secrets: Secrets, recipients: Mapping[str, bytes], session: str) -> dict[str, str]:
        secret = secrets.mask_secret
        if secret is None:
            raise ValueError("no mask secret to share")
        sealed = share_mask_secret(secret, recipients, session=session)
        return {f"mask_secret_{pid}": blob.hex() for pid, blob in sealed.items()} | \
            {"mask_commitment": secret_commitment(secret)}

    def open_secrets(self, meta: Mapping[str, Any], params: Mapping[str, Any], party_id: str,
                     x25519_private: bytes, session: str, key_bits: int) -> Secrets:
        secret = receive_mask_secret(bytes.fromhex(str(params[f"mask_secret_{party_id}"])), x25519_private,
                                     session=session, commitment=str(params.get("mask_commitment")))
        return Secrets(mask_secret=secret)

    def counts(self, ctx: ProtectionContext, *, pool: bool = False) -> PartyCodec:
        return SchemeCodec(MASK, ctx)


MASK_PROTECTION = MaskProtection()
