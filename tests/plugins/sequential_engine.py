"""An engine defined outside fedtopic: every party in turn on a thread of its own, one computing at a time (a
plugin test: the registry, ``--engine`` and the harnesses reach it without a line of fedtopic naming it)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar, TypeVar

from fedtopic.engines.base import Engine, Work

T = TypeVar("T")


class SequentialEngine(Engine):
    name: ClassVar[str] = "sequential"
    summary: ClassVar[str] = "one slot: parties take turns computing"

    def run(self, names: Sequence[str], work: Work[T], *, slots: int, address: str | None = None) -> list[T]:
        one = threading.BoundedSemaphore(1)
        with ThreadPoolExecutor(len(names)) as pool:
            return list(pool.map(lambda i: work(i, one), range(len(names))))
