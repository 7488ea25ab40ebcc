"""A synchronous node's checkpoint file: named arrays in one .npz, written atomically and durably.

The temp file is fsynced before it replaces the old checkpoint, so a crash leaves either the old state or the
new one, never half of either.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

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
