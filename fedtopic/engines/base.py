"""What every engine is: where a simulation's parties run.

An *engine* (``fedtopic simulate --engine``) takes the parties of one simulated consortium and runs each party's
work to the end: ``threads`` runs them as threads of this process (the default). What a party does is not the
engine's: the party runtime (``fedtopic.node``) drives it, and the party reaches the others over its link (the
aggregator over HTTP, a chain, an in-process board), so an engine that puts parties in other processes or on other
machines changes where they compute, never what they compute: the same seed gives the same model.

``run(names, work, slots=)`` calls ``work(i, slots)`` for every party i and returns the results in party order; the
first failure stops the run with one line naming the party. ``slots`` is a semaphore of the engine's: a party holds
it while it computes and releases it while it waits in an exchange (``node.sync_runtime``'s ``compute_lock``), so
no more parties compute at once than the engine has slots for. A result must be plain data (histories, state
arrays): the caller rebuilds what it needs from it, so results can cross processes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

T = TypeVar("T")

Work = Callable[[int, Any], T]
"""``work(party_index, slots)``: run one party to the end and return its result."""


class Engine(ABC):
    """Base of every engine."""

    name: ClassVar[str]
    summary: ClassVar[str]

    @abstractmethod
    def run(self, names: Sequence[str], work: Work[T], *, slots: int) -> list[T]:
        """``work(i, semaphore)`` for every party i (``names[i]`` names it in errors), at most ``slots`` computing at
        once; the results in party order. The first failure raises ``TrainingError`` naming the party."""

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "summary": self.summary}
