"""Typed ledger errors, all under :class:`fedtopic.errors.LedgerError`.

Each carries one line that says what was wrong and where (channel, round, chunk).
"""

from __future__ import annotations

from fedtopic.errors import LedgerError


class CompileError(LedgerError):
    """The Solidity sources cannot be compiled (compiler missing or source error)."""


class ChainUnreachable(LedgerError):
    """The JSON-RPC endpoint did not answer (after the retries of :func:`fedtopic.ledger.rpc.with_retries`)."""


class TransactionRejected(LedgerError):
    """A transaction reverted, or breaks a limit real nodes enforce (size, EIP-7623 floor, gas cap).

    ``reason`` is the contract's custom error name (e.g. ``"NotOwner"``) when there is one.
    """

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason


class NotAReader(LedgerError):
    """This party holds no wrapped key for the channel's key epoch (CP does not grant it, or it was revoked)."""


class TamperedPayload(LedgerError):
    """The chunks read do not hash to the hash the channel contract computed on chain."""


class MissingChunk(LedgerError):
    """Some chunks of a round are not in the logs that were read."""


class WrongRound(LedgerError):
    """A channel has not reached the requested round, or a round is older than the latest published."""
