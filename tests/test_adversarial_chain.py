"""Hostile clients against a real `fedtopic chain up`: no well-known admin, no unguarded test controls,
integer error codes, slow clients dropped, restarts replay to the last accepted state, and `ledger audit`
flags a reader the consortium's CP does not list (that one on anvil too; the others are about `chain up`'s own
server)."""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest
from eth_account import Account
from web3 import Web3

from fedtopic.cli.main import main
from fedtopic.consortium.config import load_consortium
from fedtopic.consortium.init import admin_key_path, init_consortium
from fedtopic.ledger.contracts import REGISTRY
from fedtopic.ledger.errors import TransactionRejected
from fedtopic.ledger.local_nodes import ANVIL_BINARY, start_chain_up
from fedtopic.ledger.rpc import Signer, connect, contract_at

pytestmark = [pytest.mark.adversarial, pytest.mark.xdist_group("node-processes")]


def _rpc(url: str, method: str, params: list | None = None) -> dict:
    return httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}).json()


def test_test_controls_need_dev_and_errors_have_integer_codes(tmp_path):
    chain = start_chain_up()
    try:
        for method in ("evm_snapshot", "evm_revert", "evm_mine", "evm_setTime"):
            answer = _rpc(chain.url, method, [])
            assert answer["error"]["code"] == -32601 and "--dev" in answer["error"]["message"], answer
        bad = _rpc(chain.url, "eth_getBalance", ["not-an-address", "latest"])
        assert isinstance(bad["error"]["code"], int), bad
        for body in ([], [1] * 1001):  # an empty batch, an oversized one
            answer = httpx.post(chain.url, json=body)
            assert answer.status_code == 400 and answer.json()["error"]["code"] == -32600
        mixed = httpx.post(chain.url, json=[7, "x", {"jsonrpc": "2.0", "id": 3, "method": "eth_chainId"}]).json()
        assert [m.get("error", {}).get("code") for m in mixed[:2]] == [-32600, -32600] and mixed[2]["result"]
        assert _rpc(chain.url, "eth_blockNumber")["result"].startswith("0x")
    finally:
        chain.stop()


def test_a_dev_chain_journals_reverts_and_restarts_to_the_same_state(tmp_path):
    data = tmp_path / "chain"
    chain = start_chain_up(data, dev=True)
    try:
        w3 = connect(chain.url)
        faucet = Signer(w3, chain.faucet_key)
        someone = Account.create().address
        faucet.transact(to=someone, value=10, what="first")
        snap = _rpc(chain.url, "evm_snapshot")["result"]
        faucet.transact(to=someone, value=5, what="to be reverted")
        assert "error" not in _rpc(chain.url, "evm_revert", [snap])
        assert w3.eth.get_balance(someone) == 10  # the 5 are gone
        faucet.transact(to=someone, value=7, what="after the revert")
        block, balance = w3.eth.block_number, w3.eth.get_balance(someone)
    finally:
        chain.stop()
    again = start_chain_up(data, dev=True)
    try:
        w3 = connect(again.url)
        assert (w3.eth.block_number, w3.eth.get_balance(someone)) == (block, balance) == (block, 17)
    finally:
        again.stop()


def test_slow_clients_are_dropped(tmp_path):
    chain = start_chain_up(extra=("--read-timeout", "1"))
    try:
        host, port = chain.url.removeprefix("http://").split(":")
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\n")  # and never finish
        started = time.monotonic()
        assert s.recv(1024) == b""  # the server closed it
        assert time.monotonic() - started < 8
        s.close()
        assert _rpc(chain.url, "eth_chainId")["result"]
    finally:
        chain.stop()


@pytest.mark.parametrize("engine", ["embedded", "anvil"])
def test_no_well_known_key_controls_a_consortium_and_audit_flags_readers_outside_cp(tmp_path, capsys, engine):
    if engine == "anvil" and not ANVIL_BINARY.exists():
        pytest.skip("anvil is installed by `npm install` in contracts/ (scripts/test does it)")
    init = init_consortium(3, tmp_path / "c", seed=9, cp={"p1": ["p2"], "p2": ["p1", "p3"], "p3": ["p1", "p2"]})
    chain = start_chain_up(engine=engine)
    try:
        bad_key = tmp_path / "dev.key"
        bad_key.write_text(chain.faucet_key.hex())  # the engine's funded account, whose key everyone knows
        assert main(["consortium", "deploy", str(init.config_path), "--rpc", chain.url, "--admin-key",
                     str(bad_key)]) == 2
        assert "well-known development key" in capsys.readouterr().err
        assert main(["consortium", "deploy", str(init.config_path), "--rpc", chain.url]) == 0
        cfg = load_consortium(init.config_path)
        w3 = connect(chain.url)
        registry = contract_at(w3, REGISTRY, cfg.chain.registry)
        admin = Account.from_key(bytes.fromhex(admin_key_path(init.config_path.parent).read_text().strip()))
        assert registry.functions.admin().call() == admin.address
        outsider = Signer(w3, chain.faucet_key)  # funded by the dev chain, but not the admin
        with pytest.raises(TransactionRejected):
            outsider.transact(registry.functions.admit(Account.create().address, "p9", b"\x01" * 32),
                              what="an outsider admitting a member")
        capsys.readouterr()
        assert main(["ledger", "audit", "--config", str(init.config_path), "--format", "json"]) == 0
        capsys.readouterr()
        # someone with the admin key grants p3 read access to p1 behind the consortium's back
        p1, p3 = (Web3.to_checksum_address(cfg.party(p).address) for p in ("p1", "p3"))
        Signer(w3, admin.key).transact(registry.functions.setAccess(p1, p3, True), what="a grant outside CP")
        assert main(["ledger", "audit", "--config", str(init.config_path), "--format", "json"]) == 1
        report = json.loads(capsys.readouterr().out)
        assert report["cp_violations"] == ["p3 can read p1's channel on chain, but CP does not allow it"]
    finally:
        chain.stop()
