"""An engine defined outside fedtopic: every party in turn on a thread of its own, one computing at a time (a
plugin test: the registry, ``--engine`` and the harnesses reach it without a line of fedtopic naming it)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import ClassVar, TypeVar

from fedtopic.engines.base import Engine, Work
from fedtopic.errors import TrainingError

T = TypeVar("T")


class SequentialEngine(Engine):
    name: ClassVar[str] = "sequential"
    summary: ClassVar[str] = "one slot: parties take turns computing"

    def run(self, names: Sequence[str], work: Work[T], *, slots: int, address: str | None = None) -> list[T]:
        one = threading.BoundedSemaphore(1)

        def party(i: int) -> T:
            try:
                return work(i, one)
            except Exception as exc:  # the contract: the first failure names its party
                raise TrainingError(f"{names[i]} failed: {exc}") from exc

        with ThreadPoolExecutor(len(names)) as pool:
            return list(pool.map(party, range(len(names))))
