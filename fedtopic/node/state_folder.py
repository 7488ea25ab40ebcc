"""A node's state folder says what run it belongs to, and a fresh start sets the old one aside, never deletes it.

Leftover state gave cryptic errors (issue 28): a folder switched from dafed-lda to csfed-lda reported a missing
persisted update, a changed ``--vocab`` a "corrupt" checkpoint. Now the folder holds ``run.json``: the algorithm
and the session params every party agrees on (``node/session_params.py``: K, iterations, seed, options, the
ordered vocabulary's sha256). A node whose run differs stops at once with one line naming what changed and how to
start afresh; ``node run --fresh`` renames the folder to ``<folder>.old-<UTC time>`` and starts empty.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fedtopic.errors import TrainingError
from fedtopic.node.state_file import DamagedFile, read_arrays, write_text_atomic

MANIFEST = "run.json"


def set_aside(state_dir: Path) -> Path | None:
    """Rename a non-empty ``state_dir`` to ``<name>.old-<UTC time>`` (a new name every second); where it went."""
    if not state_dir.is_dir() or not any(state_dir.iterdir()):
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = state_dir.with_name(f"{state_dir.name}.old-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = state_dir.with_name(f"{state_dir.name}.old-{stamp}-{n}")
    state_dir.rename(target)
    return target


def _changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    def short(v: Any) -> str:
        text = repr(v)
        return text[:14] + "…" if len(text) > 18 else text

    keys = sorted(set(old) | set(new), key=lambda k: (k not in ("algorithm", "vocab_sha256"), k))
    return ", ".join(f"{k} {short(old.get(k))} → {short(new.get(k))}" for k in keys if old.get(k) != new.get(k))


def manifest_params(state_dir: Path) -> dict[str, Any] | None:
    """The params a state folder's run.json records (None: no folder, no manifest, or unreadable)."""
    try:
        held = json.loads((state_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return held if isinstance(held, dict) else None


def claim_state(state_dir: Path, params: Mapping[str, Any]) -> None:
    """Create ``state_dir`` for the run ``params`` describes, or check that it holds that run's state (TrainingError
    in one line otherwise). A folder from before manifests is taken as it is (its checkpoint still checks itself)."""
    path = state_dir / MANIFEST
    wanted = json.loads(json.dumps(dict(params), sort_keys=True, default=str))
    if path.is_file():
        try:
            held = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            held = {}
        if held != wanted:
            raise TrainingError(f"{state_dir} holds the state of another run ({_changes(held, wanted) or 'unreadable'}"
                                f" since); `node run --fresh` sets it aside and starts afresh, or give another --state")
        return
    write_text_atomic(path, json.dumps(wanted, sort_keys=True, indent=1))


def finished_run(state_dir: Path, party_id: str, say: Callable[[str], None], checkpoint_name: str) -> dict[str, Any] | None:
    """The summary of this state folder's run if the party finished it (its model written after its last round),
    said in one line with how to start a new run; None if it has not finished."""
    summary_file, checkpoint = state_dir / "model" / "summary.json", state_dir / checkpoint_name
    if not (summary_file.is_file() and checkpoint.is_file()):
        return None
    try:
        read_arrays(checkpoint)  # a damaged state is said even when the run is over
    except DamagedFile as exc:
        raise TrainingError(f"checkpoint {checkpoint} is unreadable ({exc}); move it away (`node run --fresh` sets "
                            "it aside) to start afresh") from None
    try:
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # a model cut short: the run goes on and writes it again
    if not isinstance(summary, dict):
        return None
    say(f"party {party_id}: this run finished ({summary.get('rounds', '?')} rounds); its model is in "
        f"{summary_file.parent}. To train again, start a new run: `node run --fresh` (sets this state aside)")
    return summary | {"run": str(summary_file.parent), "already_finished": True}
