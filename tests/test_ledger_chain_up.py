"""`fedtopic chain up` as a shared chain: parties in separate OS processes, and restart from the journal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fedtopic.ledger.channel import ChainChannel
from fedtopic.ledger.local_nodes import ANVIL_BINARY, REPO_ROOT, start_chain_up
from fedtopic.ledger.rpc import connect

sys.path.insert(0, str(Path(__file__).parent))
from ledger_party_process import counts_for  # noqa: E402
from test_ledger_mcacs import FIG5_CP, SEED, SHAPE, Chain, Fig5, _publish_all  # noqa: E402


@pytest.mark.parametrize("engine", ["embedded", "anvil"])
def test_restarted_chain_up_serves_the_same_state(tmp_path: Path, engine: str) -> None:
    if engine == "anvil" and not ANVIL_BINARY.exists():
        pytest.skip("anvil is installed by `npm install` in contracts/")
    node = start_chain_up(tmp_path / "chain", engine=engine)
    try:
        c = Fig5(Chain("chain_up", node.url, node.faucet_key))
        counts = _publish_all(c, 1)
        before = c.channels["p2"].readable_heads()
    finally:
        assert node.stop() == 0
    node = start_chain_up(tmp_path / "chain", engine=engine)
    try:
        w3 = connect(node.url)
        p2 = ChainChannel(w3, c.registry, c.keys["p2"], shape=SHAPE)
        assert p2.readable_heads() == before
        got = {s.party: s.n_wk for s in p2.read_latest()}
        assert set(got) == {"p1", "p3"} and all(np.array_equal(got[q], counts[q]) for q in got)
    finally:
        node.stop()


def test_parties_in_separate_processes_share_chain_up(tmp_path: Path) -> None:
    node = start_chain_up()
    try:
        c = Fig5(Chain("chain_up", node.url, node.faucet_key))
        env = {"PYTHONPATH": str(REPO_ROOT)}
        procs = {p: subprocess.Popen([sys.executable, str(Path(__file__).parent / "ledger_party_process.py"), node.url,
                                      c.registry, SEED.decode(), p, "2", str(SHAPE[0]), str(SHAPE[1])],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                 for p in ("p1", "p2", "p3")}
        outs = {p: proc.communicate(timeout=240) for p, proc in procs.items()}
        for p, (out, err) in outs.items():
            assert procs[p].returncode == 0, err[-2000:]
        p2 = ChainChannel(c.w3, c.registry, c.keys["p2"], shape=SHAPE)
        final = {s.party: s for s in p2.read_latest()}
        assert {q: s.round for q, s in final.items()} == {"p1": 2, "p3": 2}
        assert all(np.array_equal(s.n_wk, counts_for(q, 2, SHAPE)) for q, s in final.items())
        for p, (out, _) in outs.items():
            seen = json.loads(out.strip().splitlines()[-1])
            assert set(seen) <= set(FIG5_CP[p]) and all(v["ok"] for v in seen.values())
    finally:
        node.stop()


def test_a_restart_loads_the_snapshot_and_replays_only_the_tail(tmp_path: Path) -> None:
    """chain up killed -9 after many transactions comes back from its last snapshot plus the journal's tail with
    every accepted transaction; a clean stop snapshots, so the next start replays nothing."""
    import os
    import signal

    from fedtopic.ledger.server import ChainService

    node = start_chain_up(tmp_path / "chain", extra=("--snapshot-every", "7"))
    try:
        c = Fig5(Chain("chain_up", node.url, node.faucet_key))
        counts = _publish_all(c, 1)
        counts = _publish_all(c, 2)
        before = c.channels["p2"].readable_heads()
        block = c.w3.eth.block_number
    finally:
        os.kill(node.process.pid, signal.SIGKILL)  # no clean stop: the tail after the last snapshot must replay
        node.process.wait(30)
    service = ChainService(tmp_path / "chain", snapshot_every=7)
    try:
        assert service.snapshot_entries > 0 and 0 <= service.replayed < 7
        assert service.journal_entries == service.snapshot_entries + service.replayed
    finally:
        service.close()  # a clean stop: snapshot now
    node = start_chain_up(tmp_path / "chain", extra=("--snapshot-every", "7"))
    try:
        w3 = connect(node.url)
        assert w3.eth.block_number == block
        p2 = ChainChannel(w3, c.registry, c.keys["p2"], shape=SHAPE)
        assert p2.readable_heads() == before
        got = {s.party: s.n_wk for s in p2.read_latest()}
        assert all(np.array_equal(got[q], counts[q]) for q in got)
    finally:
        node.stop()
    again = ChainService(tmp_path / "chain")
    try:
        assert again.replayed == 0  # the clean stop's snapshot holds everything
    finally:
        again.close()


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_anvil_does_not_outlive_a_killed_chain_up(tmp_path: Path) -> None:
    import os
    import signal
    import time

    if not ANVIL_BINARY.exists():
        pytest.skip("anvil is installed by `npm install` in contracts/")
    node = start_chain_up(tmp_path / "chain", engine="anvil")
    children = subprocess.run(["pgrep", "-P", str(node.process.pid)], capture_output=True, text=True).stdout.split()
    assert len(children) == 1
    os.kill(node.process.pid, signal.SIGKILL)
    node.process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and Path(f"/proc/{children[0]}").exists():
        time.sleep(0.1)
    assert not Path(f"/proc/{children[0]}").exists(), "anvil outlived its chain up"
