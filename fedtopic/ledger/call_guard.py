"""Bound what one read costs ``chain up``: a gas cap and a time cap on simulated calls, and writes first.

py-evm runs one call at a time behind the chain's lock, and an ``eth_call`` costs no one anything: the loop
``0x5b600056`` (JUMPDEST PUSH1 0 JUMP) held the lock for 3.8 s at 1e7 gas and 5-6 minutes at 1e9, and every
publication waited. Three guards, each cheap:

- **gas cap**: ``eth_call`` and ``eth_estimateGas`` run with at most ``CALL_GAS_CAP`` gas whatever they ask
  (geth's ``--rpc.gascap`` default is the same 50M), so no estimate can search above it either;
- **time cap**: while such a call runs, py-evm's gas meter checks a deadline on every charge and ends the call
  as out of gas once ``CALL_SECONDS`` have passed (py-evm has no interrupt of its own);
- **writes first**: the lock admits a waiting raw transaction before any waiting read, so a stream of slow
  reads delays a publication by at most the one read already running.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from eth.exceptions import OutOfGas
from eth.vm.gas_meter import GasMeter

CALL_GAS_CAP = 50_000_000
CALL_SECONDS = 2.0
SIMULATED_CALLS = frozenset({"eth_call", "eth_estimateGas"})

_deadline: list[float | None] = [None]  # set only while a simulated call runs (under the chain's lock)
_unbounded_consume = GasMeter.consume_gas


class CallTimeExceeded(OutOfGas):
    """A simulated call ran past its time cap."""


def _consume_within_deadline(self: GasMeter, amount: int, reason: str) -> None:
    deadline = _deadline[0]
    if deadline is not None and time.monotonic() > deadline:
        raise CallTimeExceeded(f"call ran past its time cap ({reason})")
    _unbounded_consume(self, amount, reason)


def install() -> None:
    """Make py-evm's gas meter honour :func:`time_capped` (in the ``chain up`` process; idempotent)."""
    GasMeter.consume_gas = _consume_within_deadline  # type: ignore[method-assign]


@contextmanager
def time_capped(seconds: float) -> Iterator[None]:
    """Run the block with py-evm's gas meter ending any computation after ``seconds`` (once :func:`install`-ed)."""
    _deadline[0] = time.monotonic() + seconds
    try:
        yield
    finally:
        _deadline[0] = None


def gas_capped(params: Any, cap: int, default_from: str | None = None) -> Any:
    """``params`` of an eth_call / eth_estimateGas with the transaction's gas at most ``cap`` (set to ``cap`` when
    absent: eth-tester would give it the whole block) and, without a ``from``, ``default_from`` (a funded account:
    py-evm checks that the sender can pay for the gas, even in a call). Malformed params pass unchanged for the
    chain to refuse."""
    if not isinstance(params, list) or not params or not isinstance(params[0], dict):
        return params
    tx = dict(params[0])
    if default_from is not None and not tx.get("from"):
        tx["from"] = default_from
    try:
        asked = int(tx["gas"], 16) if isinstance(tx.get("gas"), str) else int(tx.get("gas", cap))
    except (TypeError, ValueError):
        return params
    tx["gas"] = hex(min(max(asked, 0), cap))
    return [tx, *params[1:]]


class WritesFirstLock:
    """A mutex whose waiting writers (``urgent``) go before waiting readers, and whose readers are served in the
    order they came: a caller that takes the lock again and again (a batch of slow calls) queues behind every
    reader already waiting, so one slow caller cannot starve the others."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = False
        self._urgent_waiting = 0
        self._readers: deque[int] = deque()  # waiting readers' tickets, first come first served
        self._tickets = itertools.count()

    @contextmanager
    def hold(self, *, urgent: bool) -> Iterator[None]:
        with self._cond:
            ticket = None if urgent else next(self._tickets)
            if urgent:
                self._urgent_waiting += 1
            else:
                self._readers.append(ticket)  # type: ignore[arg-type]
            try:
                while self._busy or (not urgent and (self._urgent_waiting or self._readers[0] != ticket)):
                    self._cond.wait()
            finally:
                if urgent:
                    self._urgent_waiting -= 1
                else:
                    self._readers.remove(ticket)  # type: ignore[arg-type]
                    self._cond.notify_all()  # the next reader in line may go once this one is done
            self._busy = True
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()
