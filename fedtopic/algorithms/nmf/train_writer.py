"""The NMF family's centralised run (`train`): nothing measured while it fits, then its run folder
(``algorithms.nmf.run_folder.write_nmf_run``) with the fit's time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fedtopic.algorithms.base import Fitted, TrainSpec
from fedtopic.algorithms.capabilities import SweepMetrics, TrainLog, no_sweep_metrics

if TYPE_CHECKING:
    from pathlib import Path

    from fedtopic.corpus.training_data import TrainingData


class NMFTrainWriter:
    """``TrainWriter`` of the NMF family, a mixin of its centralised algorithms."""

    name: str

    def sweep_metrics(self, data: TrainingData, spec: TrainSpec, eval_every: int) -> SweepMetrics:
        return no_sweep_metrics

    def write_interrupted(self, out: Path, data: TrainingData, spec: TrainSpec, model: Any,
                          sweeps: int) -> str | None:
        return None  # an epoch's model is the optimiser's state; nothing that --continue-from takes

    def write_train(self, out: Path, data: TrainingData, spec: TrainSpec, fitted: Sequence[Fitted],
                    log: TrainLog) -> dict[str, Any]:
        from fedtopic.algorithms.nmf.run_folder import write_nmf_run

        (one,) = fitted
        return write_nmf_run(out, data, self.name, spec, one, wall_seconds=log.train_seconds,
                             extra={"train_seconds": log.train_seconds})
