"""The processes of one Ray cluster, found by its temp folder (``--temp-dir``) on their command lines, and their
stop by PID: SIGTERM, then SIGKILL to what is left."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path


def ray_pids(marker: str) -> list[int]:
    """The processes whose command line names ``marker`` (this cluster's temp folder) and all their descendants."""
    parents: dict[int, int] = {}
    marked: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
        if marker.encode() in cmd:
            marked.add(int(entry))
    found, grew = set(marked), True
    while grew:
        children = {pid for pid, parent in parents.items() if parent in found} - found
        found |= children
        grew = bool(children)
    return sorted(found)


def stop_by_pid(marker: str) -> None:
    """SIGTERM to every process of this cluster, SIGKILL to what is left after 10 s."""
    pids = ray_pids(marker)
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        until = time.monotonic() + wait
        while time.monotonic() < until and any(Path(f"/proc/{pid}").exists() for pid in pids):
            time.sleep(0.2)
        pids = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
        if not pids:
            return
