"""A session card in front of every published payload: what the publisher's updates mean, checked by every reader.

Parties of an asynchronous run never meet in a session the way the aggregator's parties do, so each publication
carries the params its counts were made under (algorithm, K, options, the ordered vocabulary's sha256: see
``node/session_params.py``) as canonical JSON. A reader compares the card byte for byte with its own before it
decodes the counts: the same 104 words in another order give counts of the same shape that mean something else,
and DAFed-LDA trained on them silently (issue 28).

Layout: ``b"FTSC" | u16 card length | card | payload``; a payload without the magic has an empty card.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from typing import Any

from fedtopic.errors import SessionMismatch

MAGIC = b"FTSC"
_LENGTH = struct.Struct("<H")
MAX_CARD_BYTES = 4096


def card_of(params: Mapping[str, Any]) -> bytes:
    """The canonical card of ``params`` (sorted keys, no spaces): equal params give equal bytes."""
    card = json.dumps(dict(params), sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    if len(card) > MAX_CARD_BYTES:
        raise ValueError(f"session card of {len(card)} bytes exceeds {MAX_CARD_BYTES}")
    return card


def attach_card(card: bytes, payload: bytes) -> bytes:
    """``payload`` with ``card`` in front (unchanged when the card is empty)."""
    return MAGIC + _LENGTH.pack(len(card)) + card + payload if card else payload


def detach_card(blob: bytes) -> tuple[bytes, bytes]:
    """(card, payload) of a published blob; a blob without a card gives an empty one."""
    if not blob.startswith(MAGIC) or len(blob) < len(MAGIC) + _LENGTH.size:
        return b"", blob
    (n,) = _LENGTH.unpack_from(blob, len(MAGIC))
    start = len(MAGIC) + _LENGTH.size
    return blob[start:start + n], blob[start + n:]


def _params(card: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(card) if card else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _short(value: Any) -> str:
    text = str(value)
    return text[:12] + "…" if len(text) > 16 else text


def check_card(reader: str, mine: bytes, owner: str, theirs: bytes) -> None:
    """SessionMismatch naming both parties and every param that differs, unless the cards are equal."""
    if theirs == mine:
        return
    a, b = _params(mine), _params(theirs)
    if b is None:
        what = "it publishes no session params (another fedtopic version?)"
    elif a is None:
        what = "this party publishes no session params"
    else:
        keys = sorted(set(a) | set(b), key=lambda k: (k != "vocab_sha256", k))
        what = ", ".join(f"{k} {_short(a.get(k, '-'))} here vs {_short(b.get(k, '-'))}" for k in keys
                         if a.get(k) != b.get(k))
        if "vocab_sha256" in what and a.get("vocabulary") == b.get("vocabulary"):
            what = "the same number of words in another order or other words (" + what + ")"
    raise SessionMismatch(f"{reader} and {owner} disagree on what their updates mean: {what}; every party must "
                          "run the same algorithm, K, options and vocabulary file (stopped before using any of "
                          f"{owner}'s counts). To recover: give whichever of the two is wrong the consortium's config "
                          "and vocabulary file, then restart every party with `node run --fresh`, in any order: that "
                          f"starts a new run, whose readers ignore this run's channels and the settings {owner}'s "
                          "still shows")
