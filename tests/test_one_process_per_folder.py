"""One process per state folder: a second `chain up`, `aggregator serve` or `node run` on a folder a live process
holds is refused at once, in one line naming that process's pid; the lock dies with its holder (kill -9 included),
so a restart after a crash is never refused."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _aggregator_proc import child_env
from _csfed_setup import make_consortium

from fedtopic.ledger.local_nodes import start_chain_up
from fedtopic.simulation.aggregator_proc import AggregatorProcess

pytestmark = [pytest.mark.adversarial, pytest.mark.xdist_group("node-processes")]


def _fedtopic(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fedtopic.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=child_env())


def _refused_by(done: subprocess.CompletedProcess, pid: int) -> None:
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"pid {pid}" in lines[0] and "in use" in lines[0], done.stderr
    assert "Traceback" not in done.stderr


def test_a_second_chain_up_on_one_data_folder_is_refused_and_a_killed_ones_folder_is_free(tmp_path):
    data = tmp_path / "chain"
    chain = start_chain_up(data)
    try:
        _refused_by(_fedtopic("chain", "up", "--port", "1", "--data", str(data)), chain.process.pid)
    finally:
        os.kill(chain.process.pid, signal.SIGKILL)
        chain.process.wait(30)
    again = start_chain_up(data)  # kill -9 left no lock behind
    again.stop()


def test_a_second_aggregator_on_one_data_folder_is_refused(tmp_path):
    config, _ = make_consortium(tmp_path / "c", protection="none")
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        _refused_by(_fedtopic("aggregator", "serve", "--config", str(config), "--data", str(tmp_path / "agg"),
                              "--port", "1"), agg.proc.pid)  # refused before it binds any port


def test_a_second_node_run_of_one_party_is_refused_before_it_touches_the_state(tmp_path):
    config, _ = make_consortium(tmp_path / "c", protection="none")
    log = tmp_path / "p1.log"
    # no aggregator is listening: the first node waits for it (--patience), holding its folder
    first = subprocess.Popen([sys.executable, "-m", "fedtopic.cli.main", "node", "run", "--config", str(config),
                              "--party", "p1", "--url", "http://127.0.0.1:9", "--patience", "120"],
                             stdout=subprocess.DEVNULL, stderr=open(log, "a"), env=child_env())
    try:
        claimed = config.parent / "state" / "p1" / "process.json"  # its folder claimed: it waits now
        until = time.monotonic() + 60
        while not claimed.exists():
            assert time.monotonic() < until and first.poll() is None, log.read_text()[-2000:]
            time.sleep(0.05)
        before = sorted(p.name for p in (config.parent / "state").rglob("*"))
        for extra in ((), ("--fresh",)):  # --fresh must not set the live node's folder aside either
            _refused_by(_fedtopic("node", "run", "--config", str(config), "--party", "p1", "--url",
                                  "http://127.0.0.1:9", *extra), first.pid)
        assert sorted(p.name for p in (config.parent / "state").rglob("*")) == before
    finally:
        first.kill()
        first.wait(30)
    assert not any(Path(config.parent / "state").glob("p1.old-*"))
