"""The ``TrainWriter`` of a family that measures nothing while it fits and writes its one fitted model with a run
writer of its own (NMF, the neural models): a mixin whose family gives ``write_run``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fedtopic.algorithms.base import Fitted, TrainSpec
from fedtopic.algorithms.capabilities import SweepMetrics, TrainLog, no_sweep_metrics

if TYPE_CHECKING:
    from pathlib import Path

    from fedtopic.corpus.training_data import TrainingData


class OneFitWriter:
    """``sweep_metrics``: nothing; ``write_interrupted``: nothing (an epoch's model is the optimiser's state, not
    what --continue-from takes); ``write_train``: the family's ``write_run`` with the fit's time."""

    name: str

    def write_run(self, out: Path, data: TrainingData, algorithm: str, spec: TrainSpec, fitted: Fitted, *,
                  wall_seconds: float, extra: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError  # the family's run folder

    def sweep_metrics(self, data: TrainingData, spec: TrainSpec, eval_every: int) -> SweepMetrics:
        return no_sweep_metrics

    def write_interrupted(self, out: Path, data: TrainingData, spec: TrainSpec, model: Any,
                          sweeps: int) -> str | None:
        return None

    def write_train(self, out: Path, data: TrainingData, spec: TrainSpec, fitted: Sequence[Fitted],
                    log: TrainLog) -> dict[str, Any]:
        (one,) = fitted
        return self.write_run(out, data, self.name, spec, one, wall_seconds=log.train_seconds,
                              extra={"train_seconds": log.train_seconds})
