"""One process per state folder: ``node run``, ``aggregator serve`` and ``chain up`` hold a lock on theirs.

Two ``node run``s of one party on one folder both ran: the history's rounds were doubled and one copy died on the
other's temporary file. The lock is an exclusive ``flock`` on ``.<folder>.lock`` *beside* the folder (a folder that
``node run --fresh`` sets aside would take a lock inside it along), held for the life of the process: the kernel
drops it when the process ends, ``kill -9`` included, so no stale lock is ever left to clean up. The lock file
names the holder's pid and command, for the one line a second process gets.
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from fedtopic.errors import ConfigError

_HELD: dict[Path, int] = {}  # lock path -> open descriptor, for the life of the process


class FolderInUse(ConfigError):
    """Another live process holds the folder."""


def lock_path(folder: Path) -> Path:
    """Where ``folder``'s lock lives: ``.<name>.lock`` in its parent."""
    folder = Path(folder).absolute()
    return folder.parent / f".{folder.name}.lock"


def hold_folder(folder: Path, command: str) -> Path:
    """Lock ``folder`` for this process (FolderInUse, in one line naming the holder's pid, if another has it).

    Idempotent within a process; the lock path."""
    path = lock_path(folder)
    if path in _HELD:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise FolderInUse(f"{folder} is in use by {holder}; stop that process first, or give this one another "
                          "folder") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "command": command}).encode(), 0)
    _HELD[path] = fd
    return path


def _holder(fd: int) -> str:
    """'pid N (`command`)' from the lock file, or what can be said without it."""
    try:
        mark = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
        return f"pid {int(mark['pid'])} (`fedtopic {str(mark['command'])[:40]}`)"
    except (OSError, ValueError, KeyError, TypeError):
        return "another fedtopic process"


def release_folders() -> None:
    """Give back every folder this process holds (the end of a command run in process; exit does it anyway)."""
    while _HELD:
        _, fd = _HELD.popitem()
        os.close(fd)
