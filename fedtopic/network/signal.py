"""Wakes the aggregate long-polls when a round closes, fails or asks for recovery, instead of polling a clock.

The service runs in worker threads and calls ``notify``; the long-polls run on an event loop and ``wait`` on
the current generation's event of *their* loop (an asyncio event belongs to one loop; a server has one, a test
client may run requests on others). A waiter takes the event *before* it checks the round, so a close between
the check and the wait still wakes it. gFedNTM runs five rounds per mini-batch step: at the former 50 ms
polling interval the waits alone cost a quarter of a second per step.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading


class RoundSignal:
    """A broadcast ``notify`` (any thread) → every ``wait``ing coroutine, on any loop, wakes."""

    def __init__(self) -> None:
        self._events: dict[asyncio.AbstractEventLoop, asyncio.Event] = {}
        self._lock = threading.Lock()

    def current(self) -> asyncio.Event:
        """The running loop's event that the next ``notify`` sets (take it before checking what you wait for)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            event = self._events.get(loop)
            if event is None:
                event = self._events[loop] = asyncio.Event()
            return event

    def notify(self) -> None:
        """Wake every waiter; safe from any thread."""
        with self._lock:
            for loop in [lp for lp in self._events if lp.is_closed()]:
                del self._events[loop]
            loops = list(self._events)
        for loop in loops:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._pulse, loop)

    def _pulse(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            old = self._events.get(loop)
            self._events[loop] = asyncio.Event()
        if old is not None:
            old.set()


async def wait_for(event: asyncio.Event, timeout: float) -> None:
    """Until ``event`` is set or ``timeout`` seconds passed."""
    if timeout <= 0:
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), timeout)
