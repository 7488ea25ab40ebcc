"""Connecting to a chain, retrying when it is unreachable, and signing/sending transactions.

Parties sign their own transactions (eth-account) and send them raw, so the same code runs on the
embedded chain, on ``fedtopic chain up``, on anvil and on any other EVM node; nothing depends on
the node holding keys.
"""

from __future__ import annotations

import ast
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import requests
from eth_abi import decode
from eth_account import Account
from eth_utils import keccak
from eth_utils.exceptions import ValidationError as EthValidationError
from web3 import Web3
from web3.contract.contract import ContractFunction
from web3.exceptions import ContractLogicError, ProviderConnectionError, Web3RPCError

from fedtopic.ledger.contracts import CHANNEL, REGISTRY, load_artifact
from fedtopic.ledger.errors import ChainUnreachable, TransactionRejected
from fedtopic.ledger.limits import TxShape, check_real_node_limits, min_gas_limit

T = TypeVar("T")
# A chain that is down, restarting, or killed while it answered (a response cut short: ChunkedEncodingError).
_UNREACHABLE = (requests.exceptions.ConnectionError, requests.exceptions.Timeout, requests.exceptions.ChunkedEncodingError,
                ProviderConnectionError, ConnectionError)
GAS_MARGIN = 1.2
PRIORITY_FEE_WEI = 1_000_000_000
BASE_FEE_TTL_S = 10.0  # max fee = 2 x base fee + tip covers base-fee growth over many blocks


def tester_revert_data(exc: Exception) -> bytes:
    """The revert data of eth-tester's TransactionFailed (its message is ``execution reverted: b'...'``)."""
    arg = exc.args[0] if exc.args else b""
    if isinstance(arg, bytes):
        return arg
    prefix = "execution reverted: "
    if isinstance(arg, str) and arg.startswith(prefix + "b"):
        value = ast.literal_eval(arg[len(prefix):])
        if isinstance(value, bytes):
            return value
    return b""


def _call_failures() -> tuple[type[BaseException], ...]:
    """What a reverted call raises: web3's ContractLogicError, and eth-tester's TransactionFailed when the embedded
    chain is in this process (eth-tester is imported only then: it is slow to import)."""
    tester = sys.modules.get("eth_tester.exceptions")
    return (ContractLogicError,) if tester is None else (ContractLogicError, tester.TransactionFailed)


@dataclass
class RetryPolicy:
    """How long every chain call in this process waits out an unreachable chain, and who hears about it.

    One rule for every place: a read, a publication, a receipt, the registry at start. Commands that answer a
    user at once (``ledger status``, ``consortium deploy``) keep the short default; ``node run`` sets its
    ``--patience`` (the same number its aggregator client uses), so a chain restarted within it is waited for."""

    patience: float = 3.0
    say: Callable[[str], None] | None = None


RETRY = RetryPolicy()
YIELDED = "yielded to waiting callers"  # `chain up` ended a simulated call that ran long while others waited
# (ledger.call_guard.YIELDED: not imported, which would load py-evm into every client process)
MAX_RETRY_DELAY = 5.0


def configure_retries(patience: float, say: Callable[[str], None] | None = None) -> None:
    """Set this process's retry policy (``node run``: its --patience and status line)."""
    RETRY.patience, RETRY.say = patience, say


def with_retries(call: Callable[[], T], *, what: str, patience: float | None = None,
                 first_delay: float = 0.2) -> T:
    """Run ``call``; on a connection failure (or a call `chain up` made yield to waiting callers) wait 0.2, 0.4,
    0.8 … s (at most ``MAX_RETRY_DELAY``) and retry until
    ``patience`` seconds (default: the process's ``RETRY.patience``) have passed, then raise ChainUnreachable naming
    the real elapsed time (the attempts' own timeouts included)."""
    limit = RETRY.patience if patience is None else patience
    delay, started, told, attempts = first_delay, time.monotonic(), False, 0
    while True:
        attempts += 1
        try:
            result = call()
        except Exception as exc:  # noqa: BLE001 - only the two transient kinds below are retried
            if not isinstance(exc, _UNREACHABLE) and YIELDED not in str(exc):
                raise
            waited = time.monotonic() - started
            if waited >= limit:
                raise ChainUnreachable(
                    f"{what}: chain unreachable after {attempts} attempts over {waited:.1f} s "
                    f"(patience {limit:g} s; {type(exc).__name__})"
                ) from None
            if not told and RETRY.say is not None and waited >= 1.0:
                RETRY.say(f"chain unreachable while {what}; retrying for up to {limit:.0f} s")
                told = True
            time.sleep(min(delay, max(0.0, limit - waited)))
            delay = min(delay * 2, MAX_RETRY_DELAY)
            continue
        if told and RETRY.say is not None:
            RETRY.say(f"chain reachable again after {time.monotonic() - started:.0f} s ({what})")
        return result


CALL_BATCH = 200  # requests per JSON-RPC batch (a transaction's answer carries its calldata)


def batch_calls(w3: Web3, items: Sequence[Any], *, what: str,
                request: Callable[[Any], Any] = lambda item: item) -> list[Any]:
    """The answers to many read requests, one JSON-RPC batch (round trip) per ``CALL_BATCH`` of them, with retries.

    ``items`` are contract view calls (``contract.functions.f(args)``), or anything ``request`` turns into a
    batchable request inside the batch (``request=w3.eth.get_transaction`` with transaction hashes)."""
    out: list[Any] = []
    for start in range(0, len(items), CALL_BATCH):
        part = items[start:start + CALL_BATCH]

        def run(part: Sequence[Any] = part) -> list[Any]:
            with w3.batch_requests() as batch:
                for item in part:
                    batch.add(request(item))
                return list(batch.execute())

        out += with_retries(run, what=what)
    return out


def connect(endpoint: str, *, timeout: float = 60.0) -> Web3:
    """A Web3 for an ``http(s)://`` JSON-RPC URL; checks the node answers (with retries)."""
    if not endpoint.startswith(("http://", "https://")):
        raise ChainUnreachable(f"chain endpoint {endpoint!r} is not an http(s) URL")
    w3 = Web3(Web3.HTTPProvider(endpoint, request_kwargs={"timeout": timeout}))
    with_retries(lambda: w3.eth.chain_id, what=f"connecting to {endpoint}")
    return w3


def _custom_errors() -> dict[bytes, tuple[str, list[str]]]:
    """4-byte selector → (name, argument types) for the custom errors of our contracts."""
    errors: dict[bytes, tuple[str, list[str]]] = {}
    for contract in (REGISTRY, CHANNEL):
        for item in load_artifact(contract)["abi"]:
            if item["type"] == "error":
                types = [i["type"] for i in item["inputs"]]
                errors[keccak(text=f"{item['name']}({','.join(types)})")[:4]] = (item["name"], types)
    return errors


def revert_name(exc: Exception) -> str:
    """Just the custom error's name (``"NotOwner"``), or "" if the revert is not one of ours."""
    data = getattr(exc, "data", None)
    raw = bytes.fromhex(data[2:]) if isinstance(data, str) and data.startswith("0x") else tester_revert_data(exc)
    return _custom_errors().get(raw[:4], ("", []))[0]


def revert_reason(exc: Exception) -> str:
    """A readable revert reason, e.g. ``NotOwner()`` or ``StaleRound(3, 5)``; else the node's message.

    web3 puts revert data in ``ContractLogicError.data`` (hex); eth-tester's TransactionFailed in its message.
    """
    data = getattr(exc, "data", None)
    raw = bytes.fromhex(data[2:]) if isinstance(data, str) and data.startswith("0x") else tester_revert_data(exc)
    known = _custom_errors().get(raw[:4])
    if known is None:
        return str(exc)
    name, types = known
    try:
        args = decode(types, raw[4:])
    except Exception:  # noqa: BLE001 - undecodable arguments: the name alone still says what happened
        return f"{name}(...)"
    return f"{name}({', '.join(str(a) for a in args)})"


class Signer:
    """A party's account bound to one chain: builds, signs and sends its transactions, in nonce order."""

    def __init__(self, w3: Web3, private_key: bytes) -> None:
        self.w3 = w3
        self.account = Account.from_key(private_key)
        self.address: str = self.account.address
        self._chain_id: int | None = None
        self._nonce: int | None = None
        self._base_fee: int | None = None
        self._base_fee_at = 0.0

    def transact(self, call: ContractFunction | None = None, *, to: str | None = None, data: bytes = b"",
                 value: int = 0, gas: int | None = None, what: str = "transaction") -> dict[str, Any]:
        """Send ``call`` (or a plain call with ``to``/``data``/``value``) and return its receipt.

        ``gas``: a known-safe gas limit, skipping ``eth_estimateGas`` (a revert is then found from the
        receipt and explained by replaying the call on the state before its block). Raises
        TransactionRejected on a revert or a real-node limit, ChainUnreachable if the node is down.
        """
        if call is not None:
            to, data = call.address, bytes.fromhex(call._encode_transaction_data()[2:])
        tx: dict[str, Any] = {"from": self.address, "value": value, "data": data}
        if to is not None:
            tx["to"] = to
        eth = self.w3.eth
        try:
            if self._chain_id is None:
                self._chain_id = with_retries(lambda: eth.chain_id, what=what)
            if self._nonce is None:
                self._nonce = with_retries(lambda: eth.get_transaction_count(self.address, "pending"), what=what)
            if gas is None:
                estimate = with_retries(lambda: eth.estimate_gas(tx), what=what)  # type: ignore[arg-type]
                gas = max(int(estimate * GAS_MARGIN), min_gas_limit(data, create=to is None))
            if self._base_fee is None or time.monotonic() - self._base_fee_at > BASE_FEE_TTL_S:
                self._base_fee = with_retries(lambda: eth.get_block("latest")["baseFeePerGas"], what=what)
                self._base_fee_at = time.monotonic()
            base_fee = self._base_fee
        except _call_failures() as exc:
            raise TransactionRejected(f"{what} from {self.address} reverts: {revert_reason(exc)}", revert_name(exc)) from None
        tx.update(gas=gas, chainId=self._chain_id, type=2,
                  maxPriorityFeePerGas=PRIORITY_FEE_WEI, maxFeePerGas=2 * base_fee + PRIORITY_FEE_WEI)
        for attempt in (1, 2):  # a second try only if our nonce was stale (another process used this key)
            tx["nonce"] = self._nonce
            raw = bytes(self.account.sign_transaction(tx).raw_transaction)
            check_real_node_limits(TxShape(size=len(raw), gas=gas, data=data, create=to is None))
            try:
                tx_hash = with_retries(lambda: eth.send_raw_transaction(raw), what=what)
                break
            except (Web3RPCError, ValueError, EthValidationError) as exc:  # the last: the embedded chain's
                if self._already_mined(raw, what):  # sent before an outage cut its answer: resending found it
                    tx_hash = keccak(raw)
                    break
                self._nonce = with_retries(lambda: eth.get_transaction_count(self.address, "pending"), what=what)
                self._base_fee = None
                if attempt == 2 or "nonce" not in str(exc).lower():
                    self._nonce = None
                    raise TransactionRejected(f"{what} from {self.address} refused by the node: {exc}") from None
        self._nonce += 1
        receipt = with_retries(lambda: eth.wait_for_transaction_receipt(tx_hash, timeout=120, poll_latency=0.02),
                               what=what)
        if receipt["status"] != 1:
            block = receipt["blockNumber"]
            probe = {k: tx[k] for k in ("from", "to", "data", "value", "gas") if k in tx}
            try:
                eth.call(probe, block_identifier=block - 1)  # type: ignore[arg-type]
                reason, name = "no reason given", ""
            except _call_failures() as exc:
                reason, name = revert_reason(exc), revert_name(exc)
            raise TransactionRejected(f"{what} from {self.address} reverted in block {block}: {reason}", name)
        return dict(receipt)

    def _already_mined(self, raw: bytes, what: str) -> bool:
        """Whether the signed transaction ``raw`` is already on the chain (a chain that died after taking it, and
        before answering, refuses the same bytes again as a used nonce)."""
        from web3.exceptions import TransactionNotFound

        try:
            with_retries(lambda: self.w3.eth.get_transaction(keccak(raw)), what=what)
        except (TransactionNotFound, Web3RPCError, ValueError):
            return False
        return True

    def deploy(self, name: str, *args: Any) -> str:
        """Deploy contract ``name`` (from the shipped artifacts) with constructor ``args``; return its address."""
        art = load_artifact(name)
        factory = self.w3.eth.contract(abi=art["abi"], bytecode=art["bytecode"])
        data = bytes.fromhex(factory.constructor(*args).data_in_transaction[2:])
        receipt = self.transact(data=data, what=f"deploying {name}")
        return receipt["contractAddress"]


def contract_at(w3: Web3, name: str, address: str) -> Any:
    """A web3 contract object for deployed contract ``name`` at ``address``."""
    return w3.eth.contract(address=Web3.to_checksum_address(address), abi=load_artifact(name)["abi"])
