"""Helpers for tests that run child processes importing this checkout's fedtopic."""

from __future__ import annotations

import os
from pathlib import Path

import fedtopic

REPO = Path(fedtopic.__file__).resolve().parent.parent


def child_env() -> dict[str, str]:
    """Environment in which a child python imports this checkout's fedtopic."""
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
