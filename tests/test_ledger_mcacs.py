"""MCACS on an EVM chain (paper §7.1, Def. 4, Fig. 5): the same suite on three backends.

Backends: the embedded py-evm chain, `fedtopic chain up` in a child process, and a real anvil
node. Read control must hold cryptographically against anyone with full chain access; write
control is the channel contract.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from web3 import Web3
from web3.middleware import Web3Middleware

from fedtopic.crypto.codec import encode_counts
from fedtopic.crypto.envelope import unwrap_channel_key
from fedtopic.crypto.keys import generate_party_keys
from fedtopic.errors import DecryptionError
from fedtopic.ledger.channel import ChainChannel
from fedtopic.ledger.contracts import CHANNEL, REGISTRY
from fedtopic.ledger.deploy import PartySpec, ensure_consortium, fund_accounts
from fedtopic.ledger.embedded import EmbeddedChain
from fedtopic.ledger.errors import (
    MissingChunk,
    NotAReader,
    TamperedPayload,
    TransactionRejected,
)
from fedtopic.ledger.keys import channel_label
from fedtopic.ledger.local_nodes import ANVIL_BINARY, start_anvil, start_chain_up
from fedtopic.ledger.raw import heads_of
from fedtopic.ledger.rpc import Signer, connect, contract_at

sys.path.insert(0, str(Path(__file__).parent))
from ledger_party_process import counts_for  # noqa: E402

SEED = b"fig5-test"
SHAPE = (300, 8)
PARTIES = [f"p{i}" for i in range(1, 6)]
# Fig. 5: consortia con1-2, con2-3, con4-5 (CP symmetric, CP_ii = 1)
FIG5_CP = {"p1": ["p2"], "p2": ["p1", "p3"], "p3": ["p2"], "p4": ["p5"], "p5": ["p4"]}


class Chain:
    """A backend under test: a Web3 factory and the faucet key; ``url`` is None for the embedded chain."""

    def __init__(self, name: str, url: str | None, faucet_key: bytes, embedded: EmbeddedChain | None = None) -> None:
        self.name, self.url, self.faucet_key, self.embedded = name, url, faucet_key, embedded

    def web3(self) -> Web3:
        return self.embedded.web3() if self.embedded is not None else connect(self.url)


@pytest.fixture(scope="module", params=["embedded", "chain_up", "anvil"])
def chain(request: pytest.FixtureRequest) -> Iterator[Chain]:
    if request.param == "embedded":
        emb = EmbeddedChain()
        yield Chain("embedded", None, emb.faucet_key, emb)
        return
    if request.param == "anvil" and not ANVIL_BINARY.exists():
        pytest.skip(f"anvil binary absent at {ANVIL_BINARY} (run `npm install` in contracts/)")
    node = start_anvil() if request.param == "anvil" else start_chain_up()
    try:
        yield Chain(request.param, node.url, node.faucet_key)
    finally:
        node.stop()


class Fig5:
    """The deployed Fig. 5 consortium on one chain."""

    def __init__(self, chain: Chain) -> None:
        self.chain = chain
        self.w3 = chain.web3()
        self.admin = Signer(self.w3, chain.faucet_key)
        self.keys = {p: generate_party_keys(p, seed=SEED) for p in PARTIES}
        self.specs = [PartySpec(p, k.address, k.x25519_public) for p, k in self.keys.items()]
        fund_accounts(self.admin, [k.address for k in self.keys.values()])
        self.deployment = ensure_consortium(self.admin, self.specs, FIG5_CP)
        self.registry = self.deployment.registry
        self.channels = {p: ChainChannel(self.w3, self.registry, k, shape=SHAPE) for p, k in self.keys.items()}
        self.base = 1

    def apply_cp(self, cp: dict[str, list[str]]) -> list[str]:
        return ensure_consortium(self.admin, self.specs, cp, self.registry).actions


@pytest.fixture(scope="module")
def fig5(chain: Chain) -> Fig5:
    return Fig5(chain)


@pytest.fixture()
def consortium(fig5: Fig5) -> Iterator[Fig5]:
    """Fig. 5 with its CP as drawn, restored after each test; ``base``: a round above every channel's head, so that
    a test's publications never depend on which tests ran before it on the shared chain."""
    fig5.apply_cp(FIG5_CP)
    heads = heads_of(fig5.w3, fig5.registry, [k.address for k in fig5.keys.values()])
    fig5.base = 1 + max((h.round for h in heads if h.published), default=0)
    yield fig5
    fig5.apply_cp(FIG5_CP)


def _publish_all(c: Fig5, round: int) -> dict[str, np.ndarray]:
    counts = {p: counts_for(p, round, SHAPE) for p in PARTIES}
    for p, n in counts.items():
        c.channels[p].publish(round, n)
    return counts


def test_deployment_is_idempotent(consortium: Fig5) -> None:
    assert consortium.apply_cp(FIG5_CP) == []


def test_fig5_each_party_decrypts_exactly_the_channels_cp_grants(consortium: Fig5) -> None:
    counts = _publish_all(consortium, consortium.base)
    for p, ch in consortium.channels.items():
        got = {s.party: s for s in ch.read_latest()}
        assert set(got) == set(FIG5_CP[p]), p
        for q, snap in got.items():
            assert snap.round == consortium.base and np.array_equal(snap.n_wk, counts[q])
        for q in set(PARTIES) - set(FIG5_CP[p]) - {p}:
            with pytest.raises(NotAReader):
                ch.read_channel_bytes(consortium.keys[q].address)


def test_non_member_with_full_chain_access_recovers_no_counts(consortium: Fig5) -> None:
    counts = _publish_all(consortium, consortium.base)
    w3 = consortium.w3
    seen = bytearray()
    lo = w3.eth.get_block("latest")["number"] - 40
    for b in range(max(lo, 0), w3.eth.block_number + 1):  # every transaction's input
        for tx in w3.eth.get_block(b, full_transactions=True)["transactions"]:
            seen += bytes(tx.get("input", tx.get("data")))  # web3 on eth-tester says "data"
    addresses = [consortium.registry] + list(consortium.deployment.channels.values())
    for log in w3.eth.get_logs({"address": addresses, "fromBlock": max(lo, 0), "toBlock": "latest"}):
        seen += bytes(log["data"])
    for a in addresses:  # raw storage, and the mappings through their public getters (eth_call's `from` is not checked)
        for slot in range(16):
            seen += bytes(w3.eth.get_storage_at(a, slot))
    outsider = generate_party_keys("outsider", seed=b"not-a-member")
    for p, chan in consortium.deployment.channels.items():
        c = contract_at(w3, CHANNEL, chan).functions
        epoch = c.keyEpoch().call()
        for reader in c.readersAt(epoch).call():
            wrapped = bytes(c.wrappedKey(epoch, reader).call())
            seen += wrapped
            with pytest.raises(DecryptionError):
                unwrap_channel_key(wrapped, outsider.x25519_private_key, channel=channel_label(w3.eth.chain_id, chan), epoch=epoch)
    for n in counts.values():
        plain = encode_counts(n)
        windows = {plain[i:i + 12] for i in range(0, len(plain) - 12, 6)}
        assert not any(wnd in seen for wnd in windows)
    with pytest.raises(NotAReader):
        ChainChannel(w3, consortium.registry, outsider)


def test_non_owner_publish_reverts_and_suspended_owner_cannot_publish(consortium: Fig5) -> None:
    p1, p2 = consortium.channels["p1"], consortium.channels["p2"]
    r = consortium.base
    p2.publish(r, counts_for("p2", r, SHAPE))
    before = p1.readable_heads()
    for intruder in (Signer(consortium.w3, consortium.keys["p1"].eth_private_key), consortium.admin):
        with pytest.raises(TransactionRejected, match=r"NotOwner\(\)"):
            intruder.transact(contract_at(consortium.w3, CHANNEL, p2.channel).functions.publish(r + 1, 0, 1, 1, b"forged"))
    assert p1.readable_heads() == before
    reg = contract_at(consortium.w3, REGISTRY, consortium.registry).functions
    consortium.admin.transact(reg.setSuspended(p2.address, True))
    try:
        with pytest.raises(TransactionRejected, match=r"OwnerSuspended\(\)"):
            p2.publish(r + 1, counts_for("p2", r + 1, SHAPE))
    finally:
        consortium.admin.transact(reg.setSuspended(p2.address, False))
    with pytest.raises(TransactionRejected, match=rf"StaleRound\({r}, {r}\)"):
        p2.publish(r, counts_for("p2", r, SHAPE))


def test_revoked_reader_cannot_decrypt_payloads_after_revocation(consortium: Fig5) -> None:
    p4, p5 = consortium.channels["p4"], consortium.channels["p5"]
    r = consortium.base
    p4.publish(r, counts_for("p4", r, SHAPE))
    assert [s.party for s in p5.read_latest()] == ["p4"]
    assert consortium.apply_cp({**FIG5_CP, "p4": []}) == ["revoked p5 read access to p4"]
    p4.publish(r + 1, counts_for("p4", r + 1, SHAPE))  # publishing rotates the key: p5 gets no copy of the new one
    assert p5.read_latest() == []
    with pytest.raises(NotAReader):
        p5.read_channel_bytes(p4.address)
    own = p4.read_latest_bytes(include_own=True)["p4"]
    assert own.round == r + 1 and own.epoch >= 2
    # the contract itself refuses a payload sealed under the key p5 still holds
    stale = Signer(consortium.w3, consortium.keys["p4"].eth_private_key)
    with pytest.raises(TransactionRejected, match=r"StaleKeyEpoch"):
        stale.transact(contract_at(consortium.w3, CHANNEL, p4.channel).functions.publish(r + 2, 0, 1, own.epoch - 1, b"x"))
    consortium.apply_cp(FIG5_CP)  # p5 back in CP: publishing under the current key is refused until p4 rotates
    with pytest.raises(TransactionRejected, match=r"KeyBehindCP"):
        stale.transact(contract_at(consortium.w3, CHANNEL, p4.channel).functions.publish(r + 2, 0, 1, own.epoch, b"x"))


def _tampering(method: str, mutate) -> type[Web3Middleware]:  # noqa: ANN001 - a callable on the result list
    class Tamper(Web3Middleware):
        def response_processor(self, m, response):  # noqa: ANN001, ANN201 - web3's middleware signature
            if m == method and "result" in response and response["result"]:
                response = {**response, "result": mutate(list(response["result"]))}
            return response

    return Tamper


def _flip_last_payload_byte(logs: list) -> list:
    log = dict(logs[-1])
    data = log["data"]
    raw = bytearray(bytes.fromhex(data[2:]) if isinstance(data, str) else bytes(data))
    raw[-40] ^= 0x01  # inside the payload bytes (the ABI tail is ≤ 31 bytes of padding)
    log["data"] = "0x" + raw.hex() if isinstance(data, str) else bytes(raw)
    return logs[:-1] + [log]


def test_tampered_or_missing_payload_is_rejected(consortium: Fig5) -> None:
    c = consortium
    writer = ChainChannel(c.w3, c.registry, c.keys["p1"], shape=SHAPE, max_chunk=100)
    r = c.base
    # the counts of round 40 whatever the round: their chunks' sizes are what the byte flip below relies on
    assert writer.publish_bytes(r, encode_counts(counts_for("p1", 40, SHAPE))).n_chunks >= 3
    for mutate, error in ((_flip_last_payload_byte, TamperedPayload), (lambda logs: logs[:-1], MissingChunk)):
        w3 = c.chain.web3()
        w3.middleware_onion.add(_tampering("eth_getLogs", mutate))
        reader = ChainChannel(w3, c.registry, c.keys["p2"], shape=SHAPE)
        with pytest.raises(error):
            reader.read_latest()
