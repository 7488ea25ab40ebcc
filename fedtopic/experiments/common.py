"""What every paper experiment shares: its settings, one measured point, progress, the held-out subset."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from fedtopic.corpus.types import Corpus

Progress = Callable[[str], None]
"""Called with one line of progress text."""

T = TypeVar("T")


def run_trainings(fn: Callable[..., T], grid: Sequence[tuple[str, tuple[Any, ...]]], progress: Progress,
                  engine: str = "threads", address: str | None = None) -> list[T]:
    """``fn(*args)`` for every (progress line, args) of an experiment's grid of independent trainings, results in
    grid order: one after the other in this process, each line announced (``threads``), or as tasks of ``engine``
    (``fedtopic.engines``: Ray at ``address``, one CPU a task; ``fn`` module-level, the args plain data)."""
    if engine == "threads":
        out = []
        for line, args in grid:
            progress(line)
            out.append(fn(*args))
        return out
    from fedtopic.engines import get_engine

    progress(f"{len(grid)} trainings on the {engine} engine")
    return get_engine(engine).map(fn, [args for _, args in grid], address=address)


@dataclass(frozen=True)
class ExperimentSettings:
    """Shared knobs; the defaults are the record run (20 parties, 200 sweeps), ``quick()`` the smoke run."""

    parties: int = 20
    iterations: int = 200
    topics: tuple[int, ...] = (10, 20, 30, 40)
    party_counts: tuple[int, ...] = (1, 5, 10, 15, 20)
    steps: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 8)
    max_delay: float = 0.02
    test_docs: int = 2000
    fold_in_iterations: int = 50
    seed: int = 0

    @staticmethod
    def quick() -> "ExperimentSettings":
        return ExperimentSettings(parties=5, iterations=40, topics=(10, 20), party_counts=(1, 3, 5), steps=(1, 2, 4), test_docs=300, fold_in_iterations=30)


@dataclass(frozen=True)
class Point:
    """One measured configuration."""

    method: str
    topics: int
    parties: int
    scheme: str
    steps: int
    perplexity: float
    perplexity_eq16: float
    seconds: float
    extra: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k != "extra"} | self.extra


def held_out_subset(test: Corpus, settings: ExperimentSettings) -> Corpus:
    """At most ``settings.test_docs`` held-out documents, drawn with the experiment's seed."""
    return test.sample_documents(settings.test_docs, settings.seed)


