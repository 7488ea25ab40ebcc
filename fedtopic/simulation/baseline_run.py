"""Run an algorithm in its centralised mode end to end: train, evaluate, write the run folder.

The driver owns the loop's side effects (progress, the curves of what the family measures after each sweep); the
algorithm's family evaluates and writes the run folder (``algorithms.capabilities.TrainWriter``), the numeric work
stays in ``fedtopic.models`` and ``fedtopic.eval``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import Mode, TrainSpec
from fedtopic.algorithms.capabilities import (
    CentralisedFit,
    ContinuedFit,
    TrainLog,
    TrainWriter,
    capability,
)
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.corpus.training_data import TrainingData
from fedtopic.runs.interrupted import note_kept

ProgressFn = Callable[[int, int, dict[str, float]], None]
"""``progress(party, iteration, metrics)`` after every sweep; metrics may hold ``perplexity``."""
StageFn = Callable[[str], None]
"""``stage(what)`` when the run moves on to work after training (at K = 1,000 the held-out fold-in alone takes
longer than a few sweeps): what it is doing now, for a progress bar's text."""

def run_baseline(
    data: TrainingData,
    algorithm: str,
    spec: TrainSpec,
    out: Path,
    *,
    eval_every: int,
    fold_in_iterations: int = 50,
    progress: ProgressFn | None = None,
    start_phi: np.ndarray | None = None,
    stage: StageFn | None = None,
) -> dict[str, Any]:
    """Train ``algorithm`` (any registered one with a centralised mode) on ``data``, evaluate on its test
    split, write ``out`` (its family's ``TrainWriter``); ``stage`` hears each step after training; ``start_phi``:
    continue from these topics (``ContinuedFit``).

    Returns the summary dict that was written to ``out/summary.json``.
    """
    algo = get_algorithm(algorithm)
    algo.require(Mode.centralised, "`fedtopic train`")
    fit: CentralisedFit = algo  # type: ignore[assignment]
    writer: TrainWriter = algo  # type: ignore[assignment]
    measure = writer.sweep_metrics(data, spec, eval_every)
    curves: dict[str, dict[int, list[tuple[int, float]]]] = {}
    last: list[tuple[int, int, Any]] = []  # (party, sweeps done, the model in training) of the last sweep

    def on_sweep(party: int, iteration: int, model: Any) -> None:
        last[:] = [(party, iteration, model)]
        metrics = measure(party, iteration, model)
        for key, value in metrics.items():
            curves.setdefault(key, {}).setdefault(party, []).append((iteration, value))
        if progress is not None:
            progress(party, iteration, metrics)

    started = time.perf_counter()
    try:
        if start_phi is None:
            models = fit.fit(data.parties, spec, on_sweep)
        else:
            models = capability(algo, ContinuedFit, "--continue-from").fit_from(data.parties, spec, start_phi,
                                                                                on_sweep)
    except KeyboardInterrupt:  # Ctrl-C: keep the state of the last sweep where the family can write it
        kept = writer.write_interrupted(out, data, spec, last[0][2], last[0][1]) if last else None
        if kept:
            note_kept(kept)
        raise
    log = TrainLog(train_seconds=time.perf_counter() - started, started=started, curves=curves,
                   fold_in_iterations=fold_in_iterations, stage=stage or (lambda what: None))
    return writer.write_train(out, data, spec, models, log)
