"""The parties of a loopback simulation as threads: results in party order, the first failure stops the run.

A synchronous party waits for aggregates that never come once another party has failed, so waiting for every
thread in order would hang; the first exception is raised (naming the party) as soon as it happens and the
pool is abandoned: the caller's aggregator child is stopped as the exception leaves its ``with``, and the
waiting threads give up after their client's (short) patience.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import TypeVar

from fedtopic.errors import TrainingError

T = TypeVar("T")

PATIENCE = 30.0
"""Seconds a simulated party keeps retrying an unreachable aggregator (its own child: if it is gone, the run is
over)."""


def run_party_threads(names: Sequence[str], work: Callable[[int], T]) -> list[T]:
    """``work(i)`` for every party i in its own thread; the results in party order."""
    pool = ThreadPoolExecutor(len(names), thread_name_prefix="party")
    futures = [pool.submit(work, i) for i in range(len(names))]
    done, _ = wait(futures, return_when=FIRST_EXCEPTION)
    failed = [(i, f.exception()) for i, f in enumerate(futures) if f in done and f.exception() is not None]
    if failed:
        pool.shutdown(wait=False, cancel_futures=True)
        i, exc = failed[0]
        raise TrainingError(f"{names[i]} failed: {exc}") from exc
    results = [f.result() for f in futures]
    pool.shutdown()
    return results
