"""An asynchronous party's checkpoint: enough to resume without publishing a round twice or skipping one.

Written atomically (temp file, fsync, rename) twice per round: once with the round's update marked *pending*
before publishing, once marked *published* after. On restart a pending round is published only if the channel does
not already hold it (the crash came between the publish and the second write). What the party needs is its own
``state()`` (``AsyncParty``); beside it the runtime keeps which party and algorithm it belongs to, whether the round
was published, and the node's running totals. Checkpoints of the first format (the LDA party's arrays, round and
sweeps in the meta) still load.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.errors import TrainingError
from fedtopic.node.state_file import read_arrays, write_arrays

_FORMAT = "fedtopic-async-checkpoint/2"
_FIRST_FORMAT = "fedtopic-dafed-checkpoint-1"
_META = "__checkpoint__"


@dataclass(frozen=True)
class CheckpointInfo:
    """What a checkpoint says about the party's progress."""

    round: int
    sweeps: int
    published: bool
    party_id: str
    totals: dict = field(default_factory=dict)  # the node's running totals (bytes, seconds, staleness) so far


def save_checkpoint(path: Path, party: Any, *, published: bool, totals: dict | None = None,
                    algorithm: str = "") -> None:
    """Write ``party.state()``, whether its round is ``published`` and the running ``totals`` to ``path``."""
    meta = {"format": _FORMAT, "party": party.party_id, "algorithm": algorithm, "round": party.round,
            "sweeps": party.sweeps, "published": published, "totals": totals or {}}
    write_arrays(path, dict(party.state()) | {_META: np.array(json.dumps(meta))})


def load_checkpoint(path: Path, party: Any, algorithm: str = "") -> CheckpointInfo:
    """Restore ``party`` from ``path``; TrainingError (one line) if it is damaged or belongs to another party,
    algorithm or corpus."""
    fresh = "move it away (`node run --fresh` sets it aside) to start over"
    try:
        arrays = read_arrays(path)
        key = _META if _META in arrays else "meta"
        meta = json.loads(str(arrays.pop(key)))
    except (ValueError, KeyError) as exc:
        raise TrainingError(f"checkpoint {path} is unreadable ({exc}); {fresh}") from None
    if meta.get("format") == _FIRST_FORMAT:  # an LDA party's arrays; round and sweeps only in the meta
        arrays["progress"] = np.array([meta.get("round", 0), meta.get("sweeps", 0)], dtype=np.int64)
    elif meta.get("format") != _FORMAT:
        raise TrainingError(f"checkpoint {path} has format {meta.get('format')!r}, not {_FORMAT!r}; {fresh}")
    wrong = [f"{k} {meta.get(k)!r} (this is {v!r})" for k, v in (("party", party.party_id), ("algorithm", algorithm))
             if meta.get(k) not in (v, None, "")]
    if wrong:
        raise TrainingError(f"checkpoint {path} belongs to another run: {', '.join(wrong)}; {fresh}")
    try:
        party.restore(arrays)
    except (ValueError, KeyError, TypeError) as exc:
        raise TrainingError(f"checkpoint {path} is corrupt or does not match this party and its corpus ({exc}); "
                            f"{fresh}") from None
    return CheckpointInfo(round=int(meta["round"]), sweeps=int(meta["sweeps"]), published=bool(meta["published"]),
                          party_id=meta["party"], totals=dict(meta.get("totals") or {}))
