"""The embedded chain: py-evm through eth-tester, in this process.

Right for simulations and tests, and what ``fedtopic chain up`` serves over HTTP. Differences from
eth-tester's defaults, and why:

- the block gas limit is raised (``EMBEDDED_GAS_LIMIT``) so a block never limits a consortium;
- raw transactions are checked against real nodes' limits (:mod:`fedtopic.ledger.limits`), so
  what passes here also passes on anvil, geth or Besu;
- a few genesis accounts, funded and with known keys, serve as faucets: parties sign their own
  transactions with their own keys, nothing needs an unlocked account;
- a transaction (and its receipt) is found by hash through py-evm's transaction index instead of
  eth-tester's scan of every block from the head down (its own TODO), which cost ~30 ms per lookup at
  a few thousand blocks and grew with the chain: ``ledger audit`` reads the sender of every chunk.
"""

from __future__ import annotations

import threading
from typing import Any

import eth_tester.backends.pyevm.main as pyevm_backend
from eth.exceptions import TransactionNotFound as IndexMiss
from eth_keys.datatypes import PrivateKey
from eth_tester import EthereumTester, PyEVMBackend
from web3 import Web3
from web3.providers.eth_tester import EthereumTesterProvider
from web3.types import RPCEndpoint, RPCResponse

from fedtopic.ledger.errors import TransactionRejected
from fedtopic.ledger.limits import check_real_node_limits, shape_of_raw

EMBEDDED_GAS_LIMIT = 120_000_000
FAUCET_ACCOUNTS = 3


def transaction_by_hash(chain: Any, transaction_hash: bytes) -> tuple[Any, Any, int]:
    """(block, transaction, index) of a transaction in the pending block or the canonical chain, as eth-tester's
    ``_get_transaction_by_hash`` returns, in O(1): the pending block, then py-evm's hash → (number, index) lookup,
    checked against the canonical block (a reverted transaction's stale entry is not found)."""
    pending = chain.get_block()
    for index, transaction in enumerate(pending.transactions):
        if transaction.hash == transaction_hash:
            return pending, transaction, index
    try:
        number, index = chain.chaindb.get_transaction_index(transaction_hash)
        if number < pending.number:  # a revert leaves the lookups of the blocks it dropped behind
            block = chain.get_canonical_block_by_number(number)
            if index < len(block.transactions) and block.transactions[index].hash == transaction_hash:
                return block, block.transactions[index], index
    except (IndexMiss, KeyError, LookupError):
        pass
    raise pyevm_backend.TransactionNotFound(f"No transaction found for transaction hash: 0x{transaction_hash.hex()}")


pyevm_backend._get_transaction_by_hash = transaction_by_hash  # what get_transaction_by_hash/_receipt call


class LimitedTesterProvider(EthereumTesterProvider):
    """EthereumTesterProvider that refuses raw transactions a real node would refuse.

    Requests are serialised by one lock: py-evm is not thread-safe, and a
    one-process simulation runs every party in its own thread.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lock = threading.RLock()

    def make_request(self, method: RPCEndpoint, params: Any) -> RPCResponse:
        with self._lock:
            return self._checked_request(method, params)

    def _checked_request(self, method: RPCEndpoint, params: Any) -> RPCResponse:
        if method == "eth_sendRawTransaction":
            raw = params[0]
            raw_bytes = bytes.fromhex(raw[2:] if raw.startswith("0x") else raw) if isinstance(raw, str) else bytes(raw)
            try:
                check_real_node_limits(shape_of_raw(raw_bytes))
            except TransactionRejected as exc:
                return {"jsonrpc": "2.0", "id": self._current_request_id, "error": {"code": -32000, "message": str(exc)}}
        return super().make_request(method, params)


class EmbeddedChain:
    """A fresh py-evm chain with a raised block gas limit and funded genesis accounts: ``FAUCET_ACCOUNTS`` of
    eth-tester's well-known test mnemonic (a development chain), or the one account of ``faucet_key`` (a chain
    served without --dev, whose faucet only its operator holds)."""

    def __init__(self, gas_limit: int = EMBEDDED_GAS_LIMIT, faucet_key: bytes | None = None) -> None:
        params = PyEVMBackend.generate_genesis_params(overrides={"gas_limit": gas_limit})
        if faucet_key is None:
            state = PyEVMBackend.generate_genesis_state(num_accounts=FAUCET_ACCOUNTS)
        else:
            state = pyevm_backend.generate_genesis_state_for_keys([PrivateKey(faucet_key)])
        self.backend = PyEVMBackend(genesis_parameters=params, genesis_state=state)
        self.tester = EthereumTester(self.backend)
        self.provider = LimitedTesterProvider(self.tester)
        self._faucet_key = faucet_key

    @property
    def faucet_key(self) -> bytes:
        """Private key of the first funded genesis account (eth-tester's test mnemonic unless one was given)."""
        return self._faucet_key if self._faucet_key is not None else self.backend.account_keys[0].to_bytes()

    def web3(self) -> Web3:
        """A Web3 bound to this chain."""
        return Web3(self.provider)
