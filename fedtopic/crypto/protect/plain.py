"""``none``: N_p in the clear as sparse triplets (paper §6.3 sparse representation), the unprotected baseline."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fedtopic.crypto.codec import MAX_COUNT, decode_counts, encode_counts
from fedtopic.crypto.protect.base import (
    AGGREGATE_MAGIC,
    HEADER,
    UPDATE_MAGIC,
    InvalidUpdate,
    ProtectionContext,
    ProtectionError,
    RoundView,
    check_counts,
    check_header,
    contributor_indices,
    meta_shape,
    pack_header,
    unpack_header,
)
from fedtopic.crypto.protect.sizes import codec_bound
from fedtopic.errors import CryptoError


def decode_plain(body: bytes, shape: tuple[int, int], error: type[ProtectionError] = InvalidUpdate) -> np.ndarray:
    """The codec's (V, K) int32 matrix, with codec errors turned into ``error``."""
    try:
        return decode_counts(body, expected_shape=shape)
    except CryptoError as exc:
        raise error(str(exc)) from None


def sum_plain(parts: Sequence[np.ndarray], shape: tuple[int, int]) -> np.ndarray:
    """Σ of (V, K) count matrices in int64; InvalidUpdate if a cell exceeds the codec's range."""
    total = np.zeros(shape, dtype=np.int64)
    for part in parts:
        total += part
    if total.size and int(total.max()) > MAX_COUNT:
        raise InvalidUpdate(f"summed count {int(total.max())} exceeds {MAX_COUNT}")
    return total


class PlainScheme:
    """``none``: header + ``codec.encode_counts(N_p)``; the aggregate is the codec form of Σ_p N_p (Eq. 8)."""

    name = "none"
    min_contributors = 1

    def session_meta(self, ctx: ProtectionContext) -> dict[str, Any]:
        return {"protection": self.name, "shape": list(ctx.shape)}

    def max_update_bytes(self, meta: Mapping[str, Any]) -> int:
        """The largest update (or recovery) this session meta allows (``sizes``)."""
        v, k = meta_shape(meta)
        return HEADER.size + codec_bound(v, k)

    def check_meta(self, meta: Mapping[str, Any]) -> None:
        meta_shape(meta)

    def encode_update(self, n_wk: np.ndarray, ctx: ProtectionContext) -> bytes:
        counts = check_counts(n_wk, ctx.shape, min(ctx.max_value, MAX_COUNT))
        return pack_header(UPDATE_MAGIC, self.name, ctx.party_index, ctx.round, ctx.shape, ctx.session) + \
            encode_counts(counts)

    def validate(self, payload: bytes, meta: Mapping[str, Any], *, round: int | None = None,
                 session: str | None = None, sender: int | None = None) -> None:  # fmt: skip
        shape = meta_shape(meta)
        head, body = unpack_header(payload, UPDATE_MAGIC)
        check_header(head, self.name, shape, round=round, session=session, sender=sender)
        decode_plain(body, shape)

    def combine(self, payloads: Sequence[bytes], view: RoundView) -> bytes:
        shape = meta_shape(view.meta)
        indices = contributor_indices(view)
        if len(payloads) != len(indices) or not payloads:
            raise InvalidUpdate(f"{len(payloads)} payloads for {len(indices)} contributors")
        parts = []
        for payload, idx in zip(payloads, indices):
            head, body = unpack_header(payload, UPDATE_MAGIC)
            check_header(head, self.name, shape, round=view.round, session=view.session)
            if head.who != idx:
                raise InvalidUpdate(f"payload of party index {head.who} is filed under party index {idx}")
            parts.append(decode_plain(body, shape))
        total = sum_plain(parts, shape)
        return pack_header(AGGREGATE_MAGIC, self.name, len(payloads), view.round, shape, view.session) + \
            encode_counts(total)

    def decode_aggregate(self, blob: bytes, ctx: ProtectionContext) -> np.ndarray:
        head, body = unpack_header(blob, AGGREGATE_MAGIC, ProtectionError)
        check_header(head, self.name, ctx.shape, round=ctx.round, session=ctx.session, error=ProtectionError)
        return decode_plain(body, ctx.shape, ProtectionError).astype(np.int64)
