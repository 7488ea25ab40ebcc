"""``threshold-reveal``: the private vocabulary's second stage as an aggregator combiner.

Every party sends one record per word it holds among the first stage's candidates (``crypto.word_records``): the
word's tag, one point of the word's Shamir polynomial and the word sealed under a key the aggregator cannot derive.
The combine groups the records by tag and passes on, for every tag that at least ``threshold`` parties sent with
the same sealed word, the sealed word and ``threshold`` of the points (those of the first parties in session
order); every other tag is dropped. What the aggregator learns: which parties hold how many of the candidates,
and which of them hold the same ones (by tag, never by word); what the parties learn: the admitted words, each
from exactly ``threshold`` points (not how many held it, nor who).

meta = {"threshold": t (1..P; 1 reveals every candidate a party holds to every party), "max_records": R (records
per update)}. A pure function of the accepted updates in party order: the same updates give the same bytes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from fedtopic.crypto.word_records import (
    RECORD_BYTES,
    RecordError,
    RevealedWord,
    pack_revealed,
    unpack_records,
)
from fedtopic.network.errors import InvalidMeta, InvalidPayload

MAX_RECORDS = 1 << 21
"""The most records one update may carry (about 2 million words: 256 MiB)."""


def parse_meta(meta: Mapping[str, Any]) -> tuple[int, int]:
    """(threshold, max_records); InvalidMeta unless both are integers in range and nothing else is set."""
    extra = sorted(set(meta) - {"threshold", "max_records"})
    if extra:
        raise InvalidMeta(f"a threshold-reveal session's meta has unknown keys: {', '.join(extra)}")
    t, r = meta.get("threshold"), meta.get("max_records")
    if not (isinstance(t, int) and not isinstance(t, bool) and 1 <= t <= 4096):
        raise InvalidMeta(f"meta.threshold must be an integer from 1 to 4096, got {t!r}")
    if not (isinstance(r, int) and not isinstance(r, bool) and 1 <= r <= MAX_RECORDS):
        raise InvalidMeta(f"meta.max_records must be an integer from 1 to {MAX_RECORDS}, got {r!r}")
    return t, r


class ThresholdRevealCombiner:
    """``threshold-reveal`` (see module docstring)."""

    name = "threshold-reveal"
    min_contributors = 2

    def check_meta(self, meta: Mapping[str, Any]) -> None:
        parse_meta(meta)

    def max_update_bytes(self, meta: Mapping[str, Any]) -> int:
        return parse_meta(meta)[1] * RECORD_BYTES

    def validate(self, payload: bytes, meta: Mapping[str, Any], *, round: int | None = None,
                 session: str | None = None, sender: int | None = None) -> None:
        try:
            unpack_records(payload, parse_meta(meta)[1])
        except RecordError as exc:
            raise InvalidPayload(str(exc)) from None

    def combine(self, payloads: Sequence[bytes], ctx: Any) -> bytes:
        """``ctx``: the round's ``combiners.RoundContext`` (not imported: ``combiners`` imports this module)."""
        threshold, max_records = parse_meta(ctx.meta)
        groups: dict[bytes, list[tuple[bytes, int, int]]] = defaultdict(list)
        for payload in payloads:
            for rec in unpack_records(payload, max_records):
                groups[rec.tag].append((rec.sealed, rec.x, rec.y))
        out = []
        for tag in sorted(groups):
            held = groups[tag]
            if len(held) < threshold or any(sealed != held[0][0] for sealed, _, _ in held):
                continue  # too few holders, or holders that disagree on the word: nobody learns it
            out.append(RevealedWord(tag, held[0][0], tuple((x, y) for _, x, y in held[:threshold])))
        return pack_revealed(out)
