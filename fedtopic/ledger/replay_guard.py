"""Refuse raw transactions signed for another chain, or for none (``chain up`` without ``--dev``).

A signature binds a transaction to a chain id (EIP-155 for legacy transactions, the first field of every
EIP-2718 typed one). eth-tester mines whatever it is given: a transaction a party's key signed for mainnet, or a
pre-EIP-155 one that is valid on every chain, got a receipt with status 1. geth refuses unprotected transactions
over RPC by default (``--rpc.allow-unprotected-txs``); ``chain up`` refuses both, and keeps unprotected ones for
``--dev`` (old tooling on a throwaway chain).

Only the envelope is read here (RLP, no signature recovery): py-evm still checks the signature itself.
"""

from __future__ import annotations

import rlp

LEGACY_UNPROTECTED_V = (27, 28)


class ForeignTransaction(ValueError):
    """A raw transaction this chain must not mine; the message says why, for the caller."""


def transaction_chain_id(raw: bytes) -> int | None:
    """The chain id ``raw`` is signed for; None for a legacy transaction without one (pre-EIP-155).

    ValueError if ``raw`` is not an RLP transaction envelope."""
    if not raw:
        raise ValueError("an empty transaction")
    try:
        if raw[0] >= 0xC0:  # a legacy transaction: an RLP list [nonce, gasPrice, gas, to, value, data, v, r, s]
            fields = rlp.decode(raw)
            if not isinstance(fields, list) or len(fields) != 9:
                raise ValueError("a legacy transaction has nine fields")
            v = int.from_bytes(fields[6], "big")
            if v in LEGACY_UNPROTECTED_V:
                return None
            if v < 35:
                raise ValueError(f"a legacy transaction's v is 27, 28 or 35 and above, not {v}")
            return (v - 35) // 2
        if raw[0] <= 0x7F:  # EIP-2718: type byte, then an RLP list whose first field is the chain id
            fields = rlp.decode(raw[1:])
            if not isinstance(fields, list) or not fields or not isinstance(fields[0], bytes):
                raise ValueError("a typed transaction starts with its chain id")
            return int.from_bytes(fields[0], "big")
    except rlp.exceptions.DecodingError as exc:
        raise ValueError(f"not an RLP transaction: {exc}") from None
    raise ValueError("not a transaction envelope")


def check_raw_transaction(params: object, chain_id: int, *, allow_unprotected: bool) -> None:
    """ForeignTransaction unless ``params`` (eth_sendRawTransaction's) holds a transaction for ``chain_id``.

    A malformed envelope is left to py-evm, which answers it as invalid params."""
    if not isinstance(params, list) or len(params) != 1 or not isinstance(params[0], str):
        return
    text = params[0][2:] if params[0].startswith(("0x", "0X")) else params[0]
    try:
        raw = bytes.fromhex(text)
        signed_for = transaction_chain_id(raw)
    except ValueError:
        return
    if signed_for is None:
        if not allow_unprotected:
            raise ForeignTransaction("transaction has no chain id (pre-EIP-155) and could be replayed on any "
                                     "chain; sign it with this chain's id, or use `chain up --dev`")
        return
    if signed_for != chain_id:
        raise ForeignTransaction(f"transaction is signed for chain id {signed_for}; this chain's id is {chain_id}")
