"""`fedtopic node run` child processes for the sync algorithms' process tests, with an optional kill -9."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path


def node_process(config: Path, party: str, url: str, log: Path, extra: Sequence[str] = ()) -> subprocess.Popen:
    """One node (JSON summary on stdout, its log appended to ``log``); ``extra``: more flags."""
    path = [str(Path(__file__).resolve().parent.parent)] + [p for p in [os.environ.get("PYTHONPATH")] if p]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}  # a test's own PYTHONPATH (plugins) kept
    return subprocess.Popen([sys.executable, "-m", "fedtopic.cli.main", "node", "run", "--config", str(config),
                             "--party", party, "--url", url, "--format", "json", *extra], stdout=subprocess.PIPE,
                            stderr=open(log, "a"), text=True, env=env)


def run_node_processes(config: Path, parties: Sequence[str], url: str, logs: dict[str, Path], *,
                       kill: str | None = None, after: str = "round 1/", extra: Sequence[str] = ()) -> dict[str, str]:
    """Every party as a process; ``kill`` is killed -9 once ``after`` is in its log, then restarted. Asserts every
    node exits 0; returns each one's stdout."""
    procs = {p: node_process(config, p, url, logs[p], extra) for p in parties}
    if kill is not None:
        until = time.monotonic() + 120
        while after not in logs[kill].read_text():
            assert time.monotonic() < until and procs[kill].poll() is None, logs[kill].read_text()[-2000:]
            time.sleep(0.05)
        os.kill(procs[kill].pid, signal.SIGKILL)
        procs[kill].wait(30)
        procs[kill] = node_process(config, kill, url, logs[kill])
    outs = {p: proc.communicate(timeout=300)[0] for p, proc in procs.items()}
    for p, proc in procs.items():
        assert proc.returncode == 0, logs[p].read_text()[-2000:]
    return outs
