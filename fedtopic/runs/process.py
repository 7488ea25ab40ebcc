"""Which process runs a run, and whether it still does: a mark written at the start, checked by a dashboard.

The mark holds the pid, the host and the process's start time as the kernel counts it (``/proc/<pid>/stat``,
field 22), so a pid reused by another process after a crash is not mistaken for the run.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from typing import Any

PROCESS_FILE = "process.json"  # a node's mark in its state folder (``state/<party>/process.json``)


def _start_ticks(pid: int) -> int | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), None where /proc cannot tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()  # after the command name, which may hold spaces
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def process_mark() -> dict[str, Any]:
    """This process: pid, host, start ticks and the wall-clock time of the mark."""
    pid = os.getpid()
    return {"pid": pid, "host": socket.gethostname(), "start_ticks": _start_ticks(pid), "started": time.time()}


def process_alive(mark: Mapping[str, Any]) -> bool | None:
    """Whether the process of ``mark`` still runs; None when it cannot be told (another host, no pid)."""
    pid = mark.get("pid")
    if not isinstance(pid, int) or mark.get("host") != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, run by another user
    ticks = mark.get("start_ticks")
    now = _start_ticks(pid)
    if isinstance(ticks, int) and now is not None and now != ticks:
        return False  # the pid now belongs to another process
    if now is None and os.path.exists("/proc/self/stat"):
        return False  # /proc works here but has no such process (a zombie being reaped)
    return True


def raise_open_files_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit (a server or a simulation holding a
    connection per party passes the common soft limit of 1,024 at 1,000 parties); the limit now in force."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):  # macOS refuses an unlimited soft limit: keep the one there is
        return soft
    return hard


STOP_WITH_PARENT = "FEDTOPIC_STOP_WITH_PARENT"  # env: the pid of the process whose death must stop this one


def stop_with_parent() -> None:
    """In a child started with ``STOP_WITH_PARENT`` set to its parent's pid (Linux): the kernel sends SIGTERM
    when that parent dies, even by kill -9, so a server a crashed ``simulate`` started does not outlive it; a
    parent already gone is SystemExit at once. Elsewhere, and without the variable, nothing happens."""
    import signal

    parent = os.environ.pop(STOP_WITH_PARENT, None)
    if parent is None or not parent.isdigit() or not os.path.exists("/proc/self"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGTERM))
    if os.getppid() != int(parent):
        raise SystemExit(f"the process that started this one ({parent}) has ended")
