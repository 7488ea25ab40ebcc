"""Upper bounds on encoded sizes, from which each scheme's ``max_update_bytes(meta)`` is built.

The aggregator reads no byte of an update body beyond this bound (and, before
reading, checks that the session's parties × bound fit its memory budget), so a
member cannot make it buffer more than the format it declared can carry.
Bounds are exact worst cases of the encoders, not estimates: every count
varint at its widest, deflate storing incompressible data.
"""

from __future__ import annotations

from fedtopic.crypto.codec import HEADER as CODEC_HEADER

_MAX_VARINT = 5  # a flat index (< 2^35) or a count (< 2^31) takes at most 5 LEB128 groups
_DEFLATE_BLOCK = 16_383  # stored blocks: 5 bytes of framing per block at worst; zlib adds 6


def deflate_bound(raw: int) -> int:
    """Largest zlib output for ``raw`` input bytes (stored blocks when nothing compresses)."""
    return raw + 5 * (raw // _DEFLATE_BLOCK + 1) + 6


def codec_bound(v: int, k: int) -> int:
    """Largest ``codec.encode_counts`` payload of a V×K count matrix (every cell non-zero)."""
    return CODEC_HEADER.size + deflate_bound(2 * _MAX_VARINT * v * k)
