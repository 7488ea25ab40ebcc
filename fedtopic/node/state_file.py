"""A synchronous node's checkpoint file: named arrays in one .npz, written atomically and durably.

The temp file is fsynced before it replaces the old checkpoint, so a crash leaves either the old state or the
new one, never half of either.
"""

from __future__ import annotations

import os
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from fedtopic.temp_names import sibling_temp


def write_arrays(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """``arrays`` to ``path`` (an .npz): temp file, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = sibling_temp(path)
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)


def write_text_atomic(path: Path, text: str) -> None:
    """``text`` to ``path``: temp file, fsync, rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = sibling_temp(path)
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)


class DamagedFile(ValueError):
    """A state file that cannot be read back whole (empty, truncated, not an .npz, a member cut short)."""


def read_arrays(path: Path) -> dict[str, np.ndarray]:
    """Every array of ``path`` (no pickle); ``DamagedFile`` (one line saying how) whatever way it is damaged:
    empty, truncated, random bytes, a zip whose member is cut short."""
    try:
        if path.stat().st_size == 0:
            raise DamagedFile("it is empty")
        with np.load(path, allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except DamagedFile:
        raise
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        raise DamagedFile(f"{type(exc).__name__}: {str(exc)[:120]}") from None
