"""Real-node limits enforced on our side, chunking/rolling hash, and the retry helper."""

from __future__ import annotations

import os
import time

import pytest
import requests
from eth_account import Account
from eth_utils import keccak
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.ledger import raw
from fedtopic.ledger.embedded import EmbeddedChain
from fedtopic.ledger.errors import ChainUnreachable
from fedtopic.ledger.limits import (
    MAX_TX_BYTES,
    TX_GAS_CAP,
    floor_gas,
    intrinsic_gas,
    publish_gas_limit,
)
from fedtopic.ledger.local_nodes import free_port
from fedtopic.ledger.rpc import connect, with_retries


def test_floor_and_intrinsic_gas_follow_eip_7623_and_2028() -> None:
    data = b"\x00" * 10 + b"\x01" * 5  # 10 zero bytes (1 token each), 5 non-zero (4 tokens each)
    assert floor_gas(data) == 21_000 + 10 * (10 + 20)
    assert intrinsic_gas(data) == 21_000 + 4 * 10 + 16 * 5
    payload = os.urandom(100_000)
    assert floor_gas(payload) <= publish_gas_limit(payload) <= TX_GAS_CAP


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=3000), st.integers(min_value=1, max_value=700))
def test_split_chunks_round_trips_and_rolling_hash_chains(payload: bytes, size: int) -> None:
    chunks = raw.split_chunks(payload, size)
    assert b"".join(chunks) == payload and all(len(c) <= size for c in chunks) and chunks
    h = keccak(chunks[0])
    for c in chunks[1:]:
        h = keccak(h + keccak(c))
    assert raw.rolling_hash(chunks) == h


def _raw_tx(chain: EmbeddedChain, data: bytes, gas: int) -> bytes:
    w3 = chain.web3()
    acct = Account.from_key(chain.faucet_key)
    tx = {"to": "0x" + "11" * 20, "data": data, "gas": gas, "nonce": w3.eth.get_transaction_count(acct.address),
          "chainId": w3.eth.chain_id, "maxFeePerGas": 10**10, "maxPriorityFeePerGas": 10**9, "value": 0}
    return bytes(acct.sign_transaction(tx).raw_transaction)


def test_embedded_chain_refuses_what_real_nodes_refuse() -> None:
    chain = EmbeddedChain()
    w3 = chain.web3()
    small = os.urandom(1000)
    with pytest.raises(Exception, match="EIP-7623 floor"):  # eth-tester alone would accept this gas limit
        w3.eth.send_raw_transaction(_raw_tx(chain, small, intrinsic_gas(small)))
    big = os.urandom(MAX_TX_BYTES)
    with pytest.raises(Exception, match="real nodes accept at most"):
        w3.eth.send_raw_transaction(_raw_tx(chain, big, floor_gas(big)))
    ok = w3.eth.send_raw_transaction(_raw_tx(chain, small, floor_gas(small)))
    assert w3.eth.get_transaction_receipt(ok)["status"] == 1


def test_unreachable_chain_is_reported_after_retries() -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(ChainUnreachable, match=r"unreachable after \d+ attempts over 0\.\d s \(patience 0.2 s; "
                                               r"ConnectionError\)"):
        with_retries(lambda: requests.post(url, timeout=1), what="test", patience=0.2, first_delay=0.01)
    with pytest.raises(ChainUnreachable, match=r"connecting to .*unreachable after \d+ attempts over [3-9]\.\d s "
                                               r"\(patience 3 s"):
        connect(url)  # the default patience of a command that answers a user


def test_a_chain_back_within_patience_is_waited_for_and_the_wait_is_said(monkeypatch) -> None:
    from fedtopic.ledger import rpc

    said: list[str] = []
    monkeypatch.setattr(rpc, "RETRY", rpc.RetryPolicy(patience=30.0, say=said.append))
    back_at = time.monotonic() + 1.5
    url = f"http://127.0.0.1:{free_port()}"

    def call() -> str:
        if time.monotonic() < back_at:
            requests.post(url, timeout=1)  # refused: nothing listens
        return "answer"

    assert with_retries(call, what="reading the channels") == "answer"
    assert said[0] == "chain unreachable while reading the channels; retrying for up to 30 s"
    assert said[-1].startswith("chain reachable again after")
    with pytest.raises(ChainUnreachable, match="not an http"):
        connect("embedded")
