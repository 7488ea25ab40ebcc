"""A protection defined outside fedtopic, to prove that adding one is one module and one registry line.

``offset-mask``: ``mask`` with a public constant added to every cell before masking and removed from the sum on
decoding (the aggregate's header says how many updates it sums). It protects nothing more than ``mask``; what it
shows is that a protection's party codec, secrets and combiner plug in without a line of fedtopic naming it: the
consortium file, ``simulate``, the node's channels and the aggregator all find it in the registry.

Registered with ``FEDTOPIC_PROTECTIONS=offset-mask=plugins.offset_mask:OffsetMask`` and the tests folder on
``PYTHONPATH`` (the aggregator child process loads it too).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from fedtopic.crypto.protect import MASK, ProtectionContext
from fedtopic.crypto.protect.base import AGGREGATE_MAGIC, unpack_header
from fedtopic.protections import SchemeCodec
from fedtopic.protections.mask import MaskProtection

OFFSET = 7


class OffsetCodec:
    """``mask``'s codec on N_p + OFFSET; the decoded sum less OFFSET × its contributors."""

    name = "offset-mask"

    def __init__(self, ctx: ProtectionContext) -> None:
        self.inner = SchemeCodec(MASK, replace(ctx, max_value=ctx.max_value + OFFSET))
        self.ctx, self.meta = self.inner.ctx, self.inner.meta | {"offset": OFFSET}

    def encode(self, n_wk: np.ndarray, round: int) -> bytes:
        return self.inner.encode(np.asarray(n_wk, dtype=np.int64) + OFFSET, round)

    def decode(self, blob: bytes, round: int) -> np.ndarray:
        head, _ = unpack_header(blob, AGGREGATE_MAGIC)
        return self.inner.decode(blob, round) - OFFSET * head.who

    def recovery(self, dropped: list[int], round: int) -> bytes:
        return self.inner.recovery(dropped, round)

    def prefill(self, count: int) -> None:
        """Nothing to prepare."""

    def close(self) -> None:
        """Nothing to stop."""

    @property
    def ciphertexts_per_update(self) -> int:
        return 0


class OffsetMask(MaskProtection):
    """``offset-mask``: carries counts only (a dense vector's fixed point already fills its cells)."""

    name: ClassVar[str] = "offset-mask"
    summary: ClassVar[str] = "mask with a public offset removed on decoding (a plugin test)"
    kinds: ClassVar[frozenset[str]] = frozenset({"counts"})

    def counts(self, ctx: ProtectionContext, *, pool: bool = False) -> Any:
        return OffsetCodec(ctx)
