"""``threads``: the parties of a simulation as threads of this process, results in party order, the first failure
stops the run.

A synchronous party waits for aggregates that never come once another party has failed, so waiting for every
thread in order would hang; the first exception is raised (naming the party) as soon as it happens and the pool is
abandoned: the caller's aggregator child is stopped as the exception leaves its ``with``, and the waiting threads
give up after their client's (short) patience.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import ClassVar, TypeVar

from fedtopic.engines.base import Engine, Work
from fedtopic.errors import ConfigError, TrainingError

T = TypeVar("T")


class ThreadEngine(Engine):
    """One thread per party; ``slots`` parties compute at once (numba and torch release the GIL)."""

    name: ClassVar[str] = "threads"
    summary: ClassVar[str] = "every party a thread of this process (the default)"

    def run(self, names: Sequence[str], work: Work[T], *, slots: int, address: str | None = None) -> list[T]:
        if address is not None:
            raise ConfigError("--address names a cluster; the threads engine runs every party in this process "
                              "(--engine ray joins a cluster)")
        semaphore = threading.BoundedSemaphore(max(1, slots))
        pool = ThreadPoolExecutor(max(1, len(names)), thread_name_prefix="party")
        futures = [pool.submit(work, i, semaphore) for i in range(len(names))]
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        failed = [(i, f.exception()) for i, f in enumerate(futures) if f in done and f.exception() is not None]
        if failed:
            pool.shutdown(wait=False, cancel_futures=True)
            i, exc = failed[0]
            raise TrainingError(f"{names[i]} failed: {exc}") from exc
        results = [f.result() for f in futures]
        pool.shutdown()
        return results


THREADS = ThreadEngine()
