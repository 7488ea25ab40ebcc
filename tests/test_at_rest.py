"""Nothing a party or the aggregator holds is readable by others at rest: a finished masked consortium of real
`aggregator serve` and `node run` processes, and a `chain up` with a data folder, leave every file 0600 and every
folder 0700 (also folders an earlier version left open)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from _csfed_setup import make_consortium
from _node_procs import run_node_processes

from fedtopic.ledger.local_nodes import start_chain_up
from fedtopic.simulation.aggregator_proc import AggregatorProcess


def _open_to_others(root: Path) -> list[str]:
    """Every path under ``root`` (itself included) with a group or other permission bit."""
    out = []
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink() and stat.S_IMODE(path.lstat().st_mode) & 0o077:
            out.append(f"{path.relative_to(root.parent)} {stat.S_IMODE(path.lstat().st_mode):04o}")
    return out


@pytest.mark.xdist_group("agg-at_rest")
def test_a_finished_masked_consortium_keeps_its_state_and_the_aggregators_private(tmp_path):
    config, cfg = make_consortium(tmp_path / "consortium", protection="mask", iterations=2)
    state = config.parent / "state"
    old = state / "p1"
    old.mkdir(parents=True, mode=0o755)  # an earlier version's open folder, and a world-readable file in it
    (old / "stale.txt").write_text("x")
    (old / "stale.txt").chmod(0o644)
    data = tmp_path / "agg-data"
    logs = {p: tmp_path / f"{p}.log" for p in cfg.party_ids}
    with AggregatorProcess(config, data, tmp_path / "agg.log") as agg:
        run_node_processes(config, cfg.party_ids, agg.url, logs)
    for pid in cfg.party_ids:
        assert (state / pid / "party-checkpoint.npz").is_file() and (state / pid / "model" / "summary.json").is_file()
    assert any(data.rglob("*")), "the aggregator wrote nothing"
    assert _open_to_others(state / "p1") == [] and _open_to_others(state / "p2") == []
    assert _open_to_others(state / "p3") == [] and _open_to_others(data) == []


def test_chain_up_keeps_its_journal_and_faucet_private(tmp_path):
    data = tmp_path / "chain"
    data.mkdir(mode=0o755)
    node = start_chain_up(data)
    try:
        assert (data / "faucet.key").is_file()
        assert _open_to_others(data) == []
    finally:
        node.stop()
