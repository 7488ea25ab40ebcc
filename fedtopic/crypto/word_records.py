"""The byte layout of the private vocabulary's threshold reveal (encoding only; the keys and shares are
``threshold_words``, the aggregator's grouping ``network.threshold_reveal``).

A party's update is a sequence of fixed-size records, strictly ascending by tag (so no tag twice):

    tag (16) | x (16) | y (16) | sealed word (80)                                 RECORD_BYTES = 128

``x, y``: a point of the word's Shamir polynomial over GF(2^127 − 1), big-endian; the sealed word is AES-256-GCM of
the word padded to ``WORD_BYTES`` (64: one length byte, at most 63 UTF-8 bytes, zeros), so that its length tells
nothing. The aggregate is, per tag held by at least ``threshold`` parties, ascending by tag:

    tag (16) | sealed word (80) | threshold × (x (16) | y (16))                    revealed_bytes(threshold)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

PRIME = (1 << 127) - 1
"""The field of the shares: the Mersenne prime 2^127 − 1."""
TAG_BYTES = 16
POINT_BYTES = 16
WORD_BYTES = 64
SEALED_BYTES = WORD_BYTES + 16  # the GCM tag
RECORD_BYTES = TAG_BYTES + 2 * POINT_BYTES + SEALED_BYTES


class RecordError(ValueError):
    """Bytes that are not well-formed records (the message says what is wrong)."""


@dataclass(frozen=True)
class ShareRecord:
    """One party's share of one word."""

    tag: bytes
    x: int
    y: int
    sealed: bytes


@dataclass(frozen=True)
class RevealedWord:
    """One word held by at least ``threshold`` parties: its sealed form and ``threshold`` points of its polynomial."""

    tag: bytes
    sealed: bytes
    points: tuple[tuple[int, int], ...]


def _point(value: int) -> bytes:
    return value.to_bytes(POINT_BYTES, "big")


def pack_records(records: Sequence[ShareRecord]) -> bytes:
    """The update of ``records`` (sorted here by tag; ValueError on a repeated tag or a malformed field)."""
    ordered = sorted(records, key=lambda r: r.tag)
    if any(a.tag == b.tag for a, b in zip(ordered, ordered[1:])):
        raise RecordError("a tag appears twice")
    out = bytearray()
    for r in ordered:
        if len(r.tag) != TAG_BYTES or len(r.sealed) != SEALED_BYTES or not (0 < r.x < PRIME and 0 <= r.y < PRIME):
            raise RecordError("a record has a field of the wrong size")
        out += r.tag + _point(r.x) + _point(r.y) + r.sealed
    return bytes(out)


def unpack_records(payload: bytes, max_records: int) -> list[ShareRecord]:
    """The records of an update; RecordError unless it is whole records, at most ``max_records``, strictly
    ascending by tag, with points in the field (x ≠ 0)."""
    if len(payload) % RECORD_BYTES:
        raise RecordError(f"{len(payload)} bytes are not whole {RECORD_BYTES}-byte records")
    n = len(payload) // RECORD_BYTES
    if n > max_records:
        raise RecordError(f"{n} records, more than the session's {max_records}")
    out, last = [], b""
    view = memoryview(payload)
    for i in range(n):
        rec = view[i * RECORD_BYTES:(i + 1) * RECORD_BYTES]
        tag = bytes(rec[:TAG_BYTES])
        if tag <= last and i:
            raise RecordError("records are not strictly ascending by tag")
        x = int.from_bytes(rec[TAG_BYTES:TAG_BYTES + POINT_BYTES], "big")
        y = int.from_bytes(rec[TAG_BYTES + POINT_BYTES:TAG_BYTES + 2 * POINT_BYTES], "big")
        if not (0 < x < PRIME and y < PRIME):
            raise RecordError("a point is outside the field")
        out.append(ShareRecord(tag, x, y, bytes(rec[TAG_BYTES + 2 * POINT_BYTES:])))
        last = tag
    return out


def revealed_bytes(threshold: int) -> int:
    """The size of one revealed word in the aggregate."""
    return TAG_BYTES + SEALED_BYTES + threshold * 2 * POINT_BYTES


def pack_revealed(words: Sequence[RevealedWord]) -> bytes:
    """The aggregate's bytes (``words`` in tag order, each with the same number of points)."""
    out = bytearray()
    for w in words:
        out += w.tag + w.sealed + b"".join(_point(x) + _point(y) for x, y in w.points)
    return bytes(out)


def unpack_revealed(payload: bytes, threshold: int) -> Iterator[RevealedWord]:
    """The revealed words of an aggregate; RecordError if it is not whole entries."""
    size = revealed_bytes(threshold)
    if len(payload) % size:
        raise RecordError(f"{len(payload)} bytes are not whole {size}-byte entries")
    for start in range(0, len(payload), size):
        entry = payload[start:start + size]
        pts = entry[TAG_BYTES + SEALED_BYTES:]
        points = tuple((int.from_bytes(pts[i:i + POINT_BYTES], "big"),
                        int.from_bytes(pts[i + POINT_BYTES:i + 2 * POINT_BYTES], "big"))
                       for i in range(0, len(pts), 2 * POINT_BYTES))
        yield RevealedWord(entry[:TAG_BYTES], entry[TAG_BYTES:TAG_BYTES + SEALED_BYTES], points)
