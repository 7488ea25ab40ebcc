"""The NTM family's centralised run (`train`): nothing measured while it fits, then its run folder
(``algorithms.ntm.run_folder.write_ntm_run``) with the fit's time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fedtopic.algorithms.base import Fitted, TrainSpec
from fedtopic.algorithms.capabilities import SweepMetrics, TrainLog, no_sweep_metrics

if TYPE_CHECKING:
    from pathlib import Path

    from fedtopic.corpus.training_data import TrainingData


class NTMTrainWriter:
    """``TrainWriter`` of the NTM family, a mixin of its centralised algorithms."""

    name: str

    def sweep_metrics(self, data: TrainingData, spec: TrainSpec, eval_every: int) -> SweepMetrics:
        return no_sweep_metrics

    def write_interrupted(self, out: Path, data: TrainingData, spec: TrainSpec, model: Any,
                          sweeps: int) -> str | None:
        return None  # an epoch's model is the optimiser's state; nothing that --continue-from takes

    def write_train(self, out: Path, data: TrainingData, spec: TrainSpec, fitted: Sequence[Fitted],
                    log: TrainLog) -> dict[str, Any]:
        from fedtopic.algorithms.ntm.run_folder import write_ntm_run

        (one,) = fitted
        return write_ntm_run(out, data, self.name, spec, one, wall_seconds=log.train_seconds,
                             extra={"train_seconds": log.train_seconds})
