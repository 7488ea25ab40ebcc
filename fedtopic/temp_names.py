"""A temporary file's name beside its target, unique to the process and the call.

A fixed ``<name>.tmp`` let two writers of one folder rename each other's half-written files away (one died in
``FileNotFoundError``); every atomic write (temp file, then rename) takes its name here instead.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path


def sibling_temp(path: Path) -> Path:
    """``.<name>.<pid>.<random>.tmp`` in ``path``'s folder (the same file system, so the rename is atomic)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
