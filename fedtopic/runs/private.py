"""Files at rest private to their owner: what ``node run``, ``aggregator serve`` and ``chain up`` write holds a
party's data, counts, model or history, or every party's updates (the aggregator under ``none``), or the chain.

``keep_private`` sets the process's umask to 077 before anything is written, so every file it creates is 0600 and
every folder 0700 (numpy, sqlite and the history writer all create files through the umask), and closes what an
earlier version left open: the folders it is given, and everything in them, lose their group and other bits.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_UMASK = 0o077


def keep_private(*folders: Path) -> None:
    """umask 077 for this process, and ``folders`` (those that exist) with all they hold made owner-only."""
    os.umask(PRIVATE_UMASK)
    for folder in folders:
        if not folder.exists():
            continue
        for path in [folder, *folder.rglob("*")]:
            if path.is_symlink():
                continue
            mode = stat.S_IMODE(path.lstat().st_mode)
            if mode & 0o077:
                path.chmod(mode & 0o700)
