"""The venv an anchor (a package fedtopic is compared with) lives in, never fedtopic's own environment: created
on first use with ``--system-site-packages`` (it reuses this machine's torch, numpy and their kin), then each of
``installs`` run through its pip, then ``probe`` imported to check it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def anchor_python(venv: Path, probe: str, installs: Sequence[Sequence[str]]) -> Path:
    """The venv's python, creating the venv if ``import {probe}`` fails there."""
    python = venv / "bin" / "python"
    check = [str(python), "-c", f"import {probe}"]
    if python.is_file() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"creating {venv} with {'; '.join(' '.join(i) for i in installs)} …", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    for args in installs:
        subprocess.run([str(python), "-m", "pip", "install", "-q", *args], check=True)
    subprocess.run(check, check=True)
    return python
