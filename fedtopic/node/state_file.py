"""A synchronous node's checkpoint file: named arrays in one .npz, written atomically and durably.

The temp file is fsynced before it replaces the old checkpoint, so a crash leaves either the old state or the
new one, never half of either. Records (small dataclasses) travel as one JSON string array.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np


def write_arrays(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """``arrays`` to ``path`` (an .npz): temp file, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)


def write_text_atomic(path: Path, text: str) -> None:
    """``text`` to ``path``: temp file, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)


def read_arrays(path: Path) -> dict[str, np.ndarray]:
    """Every array of ``path`` (no pickle); OSError or ValueError if it is not a readable .npz."""
    with np.load(path, allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def records_array(records: Sequence[Any]) -> np.ndarray:
    """Dataclass records as one JSON string (a 0-d array)."""
    return np.array(json.dumps([asdict(r) for r in records]))


def records_from(array: np.ndarray, cls: type) -> list[Any]:
    """The records ``records_array`` wrote, as ``cls`` instances."""
    return [cls(**row) for row in json.loads(str(array))]
