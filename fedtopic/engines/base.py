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
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from fedtopic.errors import ConfigError

T = TypeVar("T")

Work = Callable[[int, Any], T]
"""``work(party_index, slots)``: run one party to the end and return its result."""

_PLACE: dict[str, str] = {}


def placement() -> dict[str, str]:
    """Where the calling party runs, as its engine names it (``{"ray_node": …}`` on Ray; empty in this process):
    what a party's history lines and the run's summary record."""
    return dict(_PLACE)


def set_placement(place: dict[str, str]) -> None:
    """Called by an engine in the process where parties run."""
    _PLACE.clear()
    _PLACE.update(place)


class Engine(ABC):
    """Base of every engine."""

    name: ClassVar[str]
    summary: ClassVar[str]
    in_process: ClassVar[bool] = True
    """True: the parties run in this process (they may share objects of it: an in-memory board, an embedded
    chain); False: in other processes, reaching each other only over the network (synchronous algorithms)."""

    @abstractmethod
    def run(self, names: Sequence[str], work: Work[T], *, slots: int, address: str | None = None) -> list[T]:
        """``work(i, semaphore)`` for every party i (``names[i]`` names it in errors), at most ``slots`` computing at
        once (per process the engine runs parties in); the results in party order. The first failure raises
        ``TrainingError`` naming the party. ``address``: the engine's cluster (engines that have one)."""

    def map(self, fn: Callable[..., T], tasks: Sequence[tuple[Any, ...]], *, address: str | None = None) -> list[T]:
        """``fn(*task)`` for every task (independent trainings of an experiment's grid), results in task order. In
        this process, one after the other, unless an engine spreads them (Ray: one task per CPU of the cluster);
        ``fn`` must be a module-level function and the tasks plain data, so they can travel."""
        if address is not None:
            raise ConfigError(f"--address names a cluster; the {self.name} engine runs the tasks in this process")
        return [fn(*task) for task in tasks]

    def machines(self, address: str | None) -> tuple[str | None, list[str]]:
        """(this machine's address as the cluster knows it, the addresses of the cluster's other machines) where
        this engine would place parties; an engine whose parties all run on this machine: (None, [])."""
        return None, []

    def configured(self, folder: Path | None, *, verbose: bool = False,
                   say: Callable[[str], None] | None = None) -> Engine:
        """This engine for one run: ``folder`` is the run's folder, where an engine keeps files of its own (Ray: its
        token), ``verbose`` lets the engine's own log lines through, ``say`` tells the user one line (where those
        files are). The default: the engine itself."""
        return self

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "summary": self.summary, "in_process": self.in_process}
