"""Bound what one read costs ``chain up``: a gas cap and a time cap on simulated calls, and writes first.

py-evm runs one call at a time behind the chain's lock, and an ``eth_call`` costs no one anything: the loop
``0x5b600056`` (JUMPDEST PUSH1 0 JUMP) held the lock for 3.8 s at 1e7 gas and 5-6 minutes at 1e9, and every
publication waited. Three guards, each cheap:

- **gas cap**: ``eth_call`` and ``eth_estimateGas`` run with at most ``CALL_GAS_CAP`` gas whatever they ask
  (geth's ``--rpc.gascap`` default is the same 50M), so no estimate can search above it either;
- **time cap**: while such a call runs, py-evm's gas meter checks a deadline on every charge and ends the call
  as out of gas once it has used ``CALL_SECONDS`` of the chain thread's CPU (py-evm has no interrupt of its own).
  CPU, not wall time: what a call costs the chain is its CPU, and on a loaded machine an honest contract
  deployment's estimate took over 2 s of wall time and was refused. A wall-clock backstop of
  ``WALL_BACKSTOP`` × the cap ends a call whose thread is starved;
- **writes first, simulated calls last**: the lock admits a waiting raw transaction before any waiting read, and
  a plain read before any simulated call; a simulated call that has run ``PREEMPT_AFTER_S`` while a write or a
  read waits is ended ("yielded": its caller sends it again). So a stream of slow calls delays a publication or
  a plain read by about a quarter of a second, however many hostile callers queue (``bench_chain_reads.py``).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from eth.exceptions import OutOfGas
from eth.vm.gas_meter import GasMeter

CALL_GAS_CAP = 50_000_000
CALL_SECONDS = 2.0
SIMULATED_CALLS = frozenset({"eth_call", "eth_estimateGas"})
WALL_BACKSTOP = 4.0  # a simulated call ends after this many times its cap in wall time, whatever its CPU
PREEMPT_AFTER_S = 0.25  # a simulated call that has run this long yields to a waiting write or read
YIELDED = "yielded to waiting callers"  # how such a call's answer says so (fedtopic's callers retry it)

_deadline: list[tuple[float, float, float] | None] = [None]  # (wall time the cap could first be reached, its CPU
# deadline, the wall backstop): set only while a simulated call runs (under the chain's lock)
_yield: list[tuple[float, Callable[[], bool]]] = [(float("inf"), lambda: False)]  # (when, whether others wait)
_unbounded_consume = GasMeter.consume_gas


class CallTimeExceeded(OutOfGas):
    """A simulated call ran past its time cap."""


def _consume_within_deadline(self: GasMeter, amount: int, reason: str) -> None:
    deadline = _deadline[0]
    if deadline is not None:
        now = time.monotonic()
        # CPU time never runs ahead of wall time: the thread's clock is read only once the cap could be reached
        if now > deadline[0] and (now > deadline[2] or time.thread_time() > deadline[1]):
            raise CallTimeExceeded(f"call ran past its time cap ({reason})")
        yield_at, others_wait = _yield[0]
        if now > yield_at and others_wait():
            raise CallTimeExceeded(f"call {YIELDED} after {PREEMPT_AFTER_S:g} s; send it again")
    _unbounded_consume(self, amount, reason)


def install() -> None:
    """Make py-evm's gas meter honour :func:`time_capped` (in the ``chain up`` process; idempotent)."""
    GasMeter.consume_gas = _consume_within_deadline  # type: ignore[method-assign]


@contextmanager
def time_capped(seconds: float, others_wait: Callable[[], bool] = lambda: False) -> Iterator[None]:
    """Run the block with py-evm's gas meter ending any computation after ``seconds`` of this thread's CPU (or
    ``WALL_BACKSTOP`` × ``seconds`` of wall time), or after ``PREEMPT_AFTER_S`` once ``others_wait()`` (once
    :func:`install`-ed)."""
    now = time.monotonic()
    _deadline[0] = (now + seconds, time.thread_time() + seconds, now + WALL_BACKSTOP * seconds)
    _yield[0] = (now + PREEMPT_AFTER_S, others_wait)
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


WRITE, READ, SIMULATED = 0, 1, 2  # the lock's priority levels: a waiting write goes first, a simulated call last


class WritesFirstLock:
    """A mutex with three levels, served in that order, each first come first served: raw transactions, plain
    reads, simulated calls (``eth_call``, ``eth_estimateGas``: the only calls that can run long). A caller that
    takes the lock again and again (a batch of slow calls) queues behind every caller already waiting at its level
    and behind every one at a higher level, and a simulated call that has run ``PREEMPT_AFTER_S`` while a write or
    a read waits is ended (``CallTimeExceeded``, "yielded"): a plain read waits at most about that long behind
    hostile calls, however many."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._busy = False
        self._queues: tuple[deque[int], ...] = (deque(), deque(), deque())  # waiting tickets per level
        self._tickets = itertools.count()

    def waiting_ahead_of_simulated(self) -> bool:
        """Whether a write or a plain read waits (read without the lock: a hint for preemption)."""
        return bool(self._queues[WRITE] or self._queues[READ])

    @contextmanager
    def hold(self, level: int) -> Iterator[None]:
        """Hold the lock at ``level`` (WRITE, READ or SIMULATED)."""
        with self._cond:
            ticket = next(self._tickets)
            queue = self._queues[level]
            queue.append(ticket)
            try:
                while self._busy or queue[0] != ticket or any(self._queues[r] for r in range(level)):
                    self._cond.wait()
            finally:
                queue.remove(ticket)
                self._cond.notify_all()  # the next in line may go once this one is done
            self._busy = True
        try:
            yield
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()
