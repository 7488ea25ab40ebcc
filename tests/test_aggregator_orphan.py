"""A simulation's aggregator child ends with the process that started it, even when that process is killed -9
(``runs.process.stop_with_parent``): a crashed `simulate` leaves no server holding its port."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fedtopic.consortium.init import init_consortium

PARENT = """
import sys, time
from pathlib import Path
from fedtopic.simulation.aggregator_proc import AggregatorProcess
agg = AggregatorProcess(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))
print(agg.proc.pid, flush=True)
time.sleep(300)
"""


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="NOT RUN: the parent-death signal is Linux's")
def test_the_aggregator_child_ends_when_its_parent_is_killed(tmp_path):
    init = init_consortium(2, tmp_path / "c", seed=1)
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(init.config_path), str(tmp_path / "agg"),
                               str(tmp_path / "agg.log")], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    try:
        child = int(parent.stdout.readline())  # type: ignore[union-attr]
        assert Path(f"/proc/{child}").exists()
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        until = time.monotonic() + 15
        while Path(f"/proc/{child}").exists() and time.monotonic() < until:
            state = Path(f"/proc/{child}/stat").read_text().split()[2] if Path(f"/proc/{child}/stat").exists() else "X"
            if state == "Z":  # ended; only its (dead) parent could reap it
                break
            time.sleep(0.1)
        alive = Path(f"/proc/{child}/stat").exists() and Path(f"/proc/{child}/stat").read_text().split()[2] != "Z"
        if alive:
            os.kill(child, signal.SIGKILL)
        assert not alive, "the aggregator outlived the process that started it"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(10)
