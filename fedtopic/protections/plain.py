"""``none``: updates in the clear. The aggregator sees every party's update; a signed request still binds each one
to its party, session and round.

Counts travel in the bare sparse count codec (``fedtopic.crypto.codec``; the aggregator's ``none`` combiner),
dense vectors as floats (``dense-sum``), iFTM's topic sets as they are (``topic-merge``): the one protection that
carries every kind.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from fedtopic.crypto.codec import decode_counts, encode_counts
from fedtopic.crypto.protect import ProtectionContext
from fedtopic.errors import CryptoError
from fedtopic.protections.base import Protection

_COMBINERS = {"counts": "none", "dense": "dense-sum", "topics": "topic-merge"}


class PlainCodec:
    """The bare count codec: meta = {"shape": [V, K]}."""

    name = "none"

    def __init__(self, ctx: ProtectionContext) -> None:
        self.ctx = ctx
        self.meta: dict[str, Any] = {"shape": list(ctx.shape)}

    def encode(self, n_wk: np.ndarray, round: int) -> bytes:
        return encode_counts(np.asarray(n_wk))

    def decode(self, blob: bytes, round: int) -> np.ndarray:
        return decode_counts(blob, expected_shape=self.ctx.shape).astype(np.int64)

    def recovery(self, dropped: list[int], round: int) -> bytes:
        raise CryptoError("protection 'none' has no recovery messages")

    def prefill(self, count: int) -> None:
        """Nothing to prepare."""

    def close(self) -> None:
        """Nothing to stop."""

    @property
    def ciphertexts_per_update(self) -> int:
        return 0


class NoProtection(Protection):
    """``none``."""

    name: ClassVar[str] = "none"
    summary: ClassVar[str] = "updates in the clear (signed, bound to party, session and round)"
    kinds: ClassVar[frozenset[str]] = frozenset({"counts", "dense", "topics"})
    reveals: ClassVar[str] = "every party's update in plaintext (N_p for the LDA family)"
    floats_in_clear: ClassVar[bool] = True

    def combiner(self, kind: str) -> str:
        return _COMBINERS[kind]

    def counts(self, ctx: ProtectionContext, *, pool: bool = False) -> PlainCodec:
        return PlainCodec(ctx)


NONE = NoProtection()
