"""Wakes the aggregate long-polls when a round closes, fails or asks for recovery, instead of polling a clock.

The service runs in worker threads and calls ``notify``; the long-polls run on the event loop and ``wait`` on
the current generation's event. A waiter takes the event *before* it checks the round, so a close between the
check and the wait still wakes it. gFedNTM runs five rounds per mini-batch step: at the former 50 ms polling
interval the waits alone cost a quarter of a second per step.
"""

from __future__ import annotations

import asyncio
import contextlib


class RoundSignal:
    """A broadcast ``notify`` (any thread) → every ``wait``ing coroutine wakes (event-loop side)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Attach to the running event loop (the app's lifespan)."""
        self._loop, self._event = loop, asyncio.Event()

    def current(self) -> asyncio.Event | None:
        """The event the next ``notify`` sets (take it before checking the state you wait for)."""
        return self._event

    def notify(self) -> None:
        """Wake every waiter; safe from any thread, a no-op before ``bind``."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop is shutting down
                loop.call_soon_threadsafe(self._pulse)

    def _pulse(self) -> None:
        old, self._event = self._event, asyncio.Event()
        if old is not None:
            old.set()


async def wait_for(event: asyncio.Event | None, timeout: float) -> None:
    """Until ``event`` is set or ``timeout`` seconds passed (at once for None)."""
    if event is None or timeout <= 0:
        await asyncio.sleep(min(max(timeout, 0.0), 0.05))
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), timeout)
