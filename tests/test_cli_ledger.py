"""`fedtopic consortium deploy|grant|revoke` and `fedtopic ledger status|audit` against `fedtopic chain up`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from fedtopic.cli.main import main
from fedtopic.consortium.config import load_consortium
from fedtopic.consortium.init import key_file_path
from fedtopic.crypto.keys import load_party_keys
from fedtopic.ledger.channel import ChainChannel
from fedtopic.ledger.contracts import CHANNEL
from fedtopic.ledger.local_nodes import (
    ANVIL_BINARY,
    ANVIL_FAUCET_KEY,
    LocalNode,
    start_chain_up,
)
from fedtopic.ledger.rpc import Signer, connect, contract_at

SHAPE = (50, 4)


@pytest.fixture(params=["embedded", "anvil"])
def node(request: pytest.FixtureRequest) -> Iterator[LocalNode]:
    """The same ledger commands against both engines of `chain up` (web3.py's practice: one suite, two backends)."""
    if request.param == "anvil" and not ANVIL_BINARY.exists():
        pytest.skip("anvil is installed by `npm install` in contracts/ (scripts/test does it)")
    n = start_chain_up(engine=request.param)
    yield n
    n.stop()


def _json(capsys: pytest.CaptureFixture, argv: list[str], code: int = 0) -> dict:
    assert main(argv) == code, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_deploy_publish_status_audit_revoke(tmp_path: Path, node: LocalNode, capsys: pytest.CaptureFixture) -> None:
    cp = tmp_path / "cp.csv"
    cp.write_text("1,1,0\n1,1,1\n0,1,1\n")  # Fig. 5's con1-2 and con2-3
    assert main(["consortium", "init", "--parties", "3", "--cp", str(cp), "--out", str(tmp_path / "c")]) == 0
    config = tmp_path / "c" / "consortium.toml"
    capsys.readouterr()
    first = _json(capsys, ["consortium", "deploy", str(config), "--rpc", node.url, *node.faucet_args, "--format", "json"])
    assert first["actions"] and not first["keys_pending"]
    assert load_consortium(config).chain.registry == first["registry"]
    again = _json(capsys, ["consortium", "deploy", str(config), "--format", "json"])
    assert again["actions"] == []

    w3 = connect(node.url)
    keys = {p: load_party_keys(key_file_path(config.parent, p)) for p in ("p1", "p2", "p3")}
    chans = {p: ChainChannel(w3, first["registry"], k, shape=SHAPE) for p, k in keys.items()}
    for r in (1, 2):
        for p, ch in chans.items():
            ch.publish(r, np.full(SHAPE, r, dtype=np.int32))
    status = _json(capsys, ["ledger", "status", "--config", str(config), "--format", "json"])
    rows = {c["party_id"]: c for c in status["channels"]}
    assert {p: r["latest_round"] for p, r in rows.items()} == {"p1": 2, "p2": 2, "p3": 2}
    assert sorted(rows["p2"]["readers"]) == ["p1", "p2", "p3"] and all(r["key_matches_cp"] for r in rows.values())
    if node.faucet_key == ANVIL_FAUCET_KEY:  # no log index on anvil: the history columns say "not known"
        assert all(r["payload_bytes"] == -1 and r["publish_transactions"] == -1 for r in rows.values())
    else:
        assert all(r["payload_bytes"] > 0 and r["publish_transactions"] == 2 for r in rows.values())
    audit = _json(capsys, ["ledger", "audit", "--config", str(config), "--format", "json"])
    assert audit["failed"] == 0 and len(audit["rounds"]) == 6
    assert main(["ledger", "audit", "--config", str(config)]) == 0  # nothing new: said so, no empty table
    again = capsys.readouterr()
    assert "nothing new since the last audit" in again.out and "verdict" not in again.out
    assert "blocks" not in again.err  # it printed "blocks 88..87"
    assert main(["ledger", "audit", "--config", str(config), "--full"]) == 0  # the verdict first, no row per round
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("ok: 6 rounds audited now (full") and len(lines) == 1, lines
    assert main(["ledger", "audit", "--config", str(config), "--full", "--verbose"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 1 + 1 + 6  # verdict, header, a row per round

    revoked = _json(capsys, ["consortium", "revoke", str(config), "p2", "p1", "--format", "json"])
    assert "revoked p1 read access to p2" in revoked["actions"]
    assert any(a.startswith("p2 wrapped its channel key") for a in revoked["actions"])
    chans["p2"].publish(3, np.full(SHAPE, 3, dtype=np.int32))
    assert [s.party for s in chans["p1"].read_latest()] == []

    # an abandoned round (chunk 0 of 2, never finished) makes the audit fail, with a table and exit 1
    p3 = Signer(w3, keys["p3"].eth_private_key)
    p3.transact(contract_at(w3, CHANNEL, chans["p3"].channel).functions.publish(9, 0, 2, 1, b"\x01" * 64))
    assert main(["ledger", "audit", "--config", str(config)]) == 1
    out = capsys.readouterr().out
    assert "incomplete round" in out and "1 failed" in out and out.startswith("FAILED: ")
    assert "incremental" in out and "0 rounds audited now" not in out  # only p2's round 3 and p3's were new
    # chunk 0 again: round 9 restarts, so the first attempt is abandoned for good; --full finds the same
    p3.transact(contract_at(w3, CHANNEL, chans["p3"].channel).functions.publish(9, 0, 2, 1, b"\x02" * 64))
    assert main(["ledger", "audit", "--config", str(config)]) == 1
    assert "incomplete (abandoned) round" in capsys.readouterr().out
    assert main(["ledger", "audit", "--config", str(config), "--full", "--format", "json"]) == 1
    full = json.loads(capsys.readouterr().out)
    assert full["mode"] == "full" and full["rounds_verified"] == 6 + 1 + 1


def test_ledger_commands_report_config_errors_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["consortium", "init", "--parties", "2", "--out", str(tmp_path / "c")]) == 0
    capsys.readouterr()
    assert main(["ledger", "status", "--config", str(tmp_path / "c" / "consortium.toml")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "embedded" in err
