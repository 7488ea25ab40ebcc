"""A DAFed party's checkpoint: enough to resume without publishing a round twice or skipping one.

Written atomically (temp file + rename) twice per round: once with the round's
counts marked *pending* before publishing, once marked *published* after. On
restart a pending round is published only if the channel does not already
hold it (the crash came between the publish and the second write).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from fedtopic.algorithms.lda.party import LDAParty
from fedtopic.errors import ModelError, TrainingError
from fedtopic.models.state import LDAState
from fedtopic.node.state_file import read_arrays

_FORMAT = "fedtopic-dafed-checkpoint-1"


@dataclass(frozen=True)
class CheckpointInfo:
    """What a checkpoint says about the party's progress."""

    round: int
    sweeps: int
    published: bool
    party_id: str
    totals: dict = field(default_factory=dict)  # the node's running totals (bytes, seconds, staleness) so far


def save_checkpoint(path: Path, party: LDAParty, *, published: bool, totals: dict | None = None) -> None:
    """Write the party's sampler state, progress and running ``totals`` to ``path`` (an .npz) atomically."""
    state = party.model.state
    meta = {"format": _FORMAT, "party": party.party_id, "round": party.round, "sweeps": party.sweeps, "published": published,
            "topics": party.hyper.n_topics, "tokens": party.corpus.n_tokens, "words": party.corpus.n_words,
            "totals": totals or {}}
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, z=state.z, n_dk=state.n_dk, n_wk=state.n_wk, n_k=state.n_k, rng=state.rng, meta=np.array(json.dumps(meta)))
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)


def load_checkpoint(path: Path, party: LDAParty) -> CheckpointInfo:
    """Restore ``party`` from ``path``; TrainingError if it is corrupt or belongs to another party or corpus."""
    try:
        stored = read_arrays(path)
        meta = json.loads(str(stored["meta"]))
        arrays = {k: stored[k] for k in ("z", "n_dk", "n_wk", "n_k", "rng")}
    except (ValueError, KeyError) as exc:
        raise TrainingError(f"checkpoint {path} is unreadable ({exc}); move it away (`node run --fresh` sets it "
                            "aside) to start over") from None
    expected = {"format": _FORMAT, "party": party.party_id, "topics": party.hyper.n_topics,
                "tokens": party.corpus.n_tokens, "words": party.corpus.n_words}
    wrong = [f"{k}={meta.get(k)!r} (expected {v!r})" for k, v in expected.items() if meta.get(k) != v]
    if wrong:
        raise TrainingError(f"checkpoint {path} does not match this party/corpus: {', '.join(wrong)}")
    try:
        party.resume(LDAState(**arrays), round=int(meta["round"]), sweeps=int(meta["sweeps"]))
    except ModelError as exc:
        raise TrainingError(f"checkpoint {path} is corrupt ({exc}); move it away to start over") from None
    return CheckpointInfo(round=int(meta["round"]), sweeps=int(meta["sweeps"]), published=bool(meta["published"]),
                          party_id=meta["party"], totals=dict(meta.get("totals") or {}))
