"""The round-close signal that wakes aggregate long-polls."""

from __future__ import annotations

import asyncio
import threading

from fedtopic.network.signal import RoundSignal, wait_for


def test_a_notify_from_another_thread_wakes_every_waiter_and_later_waits_need_a_new_one() -> None:
    async def scenario() -> list[str]:
        signal = RoundSignal()
        signal.notify()  # nobody waits yet: nothing to wake, no error
        first = signal.current()
        woke: list[str] = []

        async def waiter(name: str, event: asyncio.Event | None) -> None:
            await wait_for(event, 30.0)
            woke.append(name)

        tasks = [asyncio.create_task(waiter(n, first)) for n in ("a", "b")]
        await asyncio.sleep(0)
        threading.Thread(target=signal.notify).start()  # as the service does, from a worker thread
        await asyncio.wait_for(asyncio.gather(*tasks), 10.0)  # both woke long before their 30 s
        second = signal.current()
        assert second is not first and not second.is_set()  # a new generation for the next waits
        await wait_for(second, 0.01)  # times out quietly
        return woke

    assert sorted(asyncio.run(scenario())) == ["a", "b"]


def test_waiters_on_two_event_loops_both_wake() -> None:
    """A server has one loop, a test client may run requests on others: every loop gets its own event."""
    signal = RoundSignal()
    woke: list[int] = []
    ready = threading.Barrier(3)

    def waiter(i: int) -> None:
        async def run() -> None:
            event = signal.current()
            ready.wait()
            await wait_for(event, 30.0)
            woke.append(i)

        asyncio.run(run())

    threads = [threading.Thread(target=waiter, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    ready.wait()
    signal.notify()
    for t in threads:
        t.join(10.0)
    assert sorted(woke) == [0, 1]
