"""Limits real Ethereum nodes enforce and eth-tester does not, checked on our side.

eth-tester accepts transactions that geth, Besu or anvil would refuse; without these checks a
consortium that works on the embedded chain could fail on a real network. We enforce:

- transaction size ≤ ``MAX_TX_BYTES`` (geth's txpool limit, 4 × 32 KiB slots);
- gas limit ≤ ``TX_GAS_CAP`` (EIP-7825, 2**24);
- gas limit ≥ the EIP-7623 calldata floor, ``21000 + 10·(zero bytes + 4·non-zero bytes)``,
  and ≥ the standard intrinsic cost (EIP-2028: 4 gas per zero byte, 16 per non-zero byte;
  EIP-3860 for contract creation).

Channel payloads are split into chunks of at most ``MAX_CHUNK_BYTES`` so that a publish
transaction (ABI overhead included) stays under the size limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedtopic.ledger.errors import TransactionRejected

MAX_TX_BYTES = 128 * 1024
TX_GAS_CAP = 2**24
MAX_CHUNK_BYTES = 100_000
TX_BASE_GAS = 21_000
CREATE_GAS = 32_000


def calldata_tokens(data: bytes) -> int:
    """EIP-7623 tokens: zero bytes count 1, non-zero bytes 4."""
    zeros = data.count(0)
    return zeros + 4 * (len(data) - zeros)


def floor_gas(data: bytes) -> int:
    """EIP-7623 floor: the least gas a transaction with this calldata may use."""
    return TX_BASE_GAS + 10 * calldata_tokens(data)


def intrinsic_gas(data: bytes, *, create: bool = False) -> int:
    """Standard intrinsic gas (EIP-2028 calldata, EIP-3860 initcode words for creation)."""
    gas = TX_BASE_GAS + 4 * calldata_tokens(data)
    if create:
        gas += CREATE_GAS + 2 * ((len(data) + 31) // 32)
    return gas


def min_gas_limit(data: bytes, *, create: bool = False) -> int:
    """The smallest gas limit a real Prague node accepts for this calldata."""
    return max(floor_gas(data), intrinsic_gas(data, create=create))


PUBLISH_EXECUTION_BASE_GAS = 250_000  # cold storage writes of the head (≤ 8 slots), registry call, log topics


def publish_gas_limit(calldata: bytes) -> int:
    """A safe gas limit for ``PartyChannel.publish`` without ``eth_estimateGas`` (which py-evm runs as a
    binary search, ~10 executions). Bound: intrinsic + base + per byte (log data 8, calldata copy and
    keccak ≤ 2) + memory expansion of two payload copies; never below the EIP-7623 floor. Only gas used
    is charged, so a generous limit costs nothing."""
    words = (len(calldata) + 31) // 32
    memory = 2 * (3 * words + words * words // 512)
    execution = PUBLISH_EXECUTION_BASE_GAS + 10 * len(calldata) + memory
    return max(floor_gas(calldata), intrinsic_gas(calldata) + execution)


@dataclass(frozen=True)
class TxShape:
    """What the limits depend on: encoded size, gas limit, calldata and whether it creates a contract."""

    size: int
    gas: int
    data: bytes
    create: bool


def shape_of_raw(raw: bytes) -> TxShape:
    """Decode a signed raw transaction (any type py-evm knows)."""
    try:
        from eth.vm.forks.prague.transactions import (
            PragueTransactionBuilder,  # py-evm: only the embedded chain
        )

        tx = PragueTransactionBuilder.decode(raw)
    except Exception as exc:  # noqa: BLE001 - any decoding failure is a malformed transaction
        raise TransactionRejected(f"malformed raw transaction: {exc}") from None
    return TxShape(size=len(raw), gas=tx.gas, data=bytes(tx.data), create=not tx.to)


def check_real_node_limits(shape: TxShape) -> None:
    """Raise TransactionRejected if a real node would refuse this transaction."""
    if shape.size > MAX_TX_BYTES:
        raise TransactionRejected(f"transaction is {shape.size} bytes; real nodes accept at most {MAX_TX_BYTES}")
    if shape.gas > TX_GAS_CAP:
        raise TransactionRejected(f"gas limit {shape.gas} exceeds the EIP-7825 cap {TX_GAS_CAP}")
    need = min_gas_limit(shape.data, create=shape.create)
    if shape.gas < need:
        raise TransactionRejected(f"gas limit {shape.gas} is below the intrinsic/EIP-7623 floor {need}")
