"""DAFed-LDA's run folder after a simulation: every party's Φ_Σ evaluated, staleness and rounds plotted
(``DAFedLDA.write_async_simulation``; the demo's too)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from fedtopic.algorithms.asynchronous import PartyLog
from fedtopic.algorithms.base import TrainSpec
from fedtopic.algorithms.lda.party import privacy_summary
from fedtopic.corpus.training_data import TrainingData
from fedtopic.eval.plots import plot_grouped_bars, plot_histogram
from fedtopic.eval.report import evaluate_model
from fedtopic.eval.topic_table import topic_table
from fedtopic.models.prior import alpha_json
from fedtopic.runs.folder import (
    TopicModelFile,
    save_topic_model,
    stable_summary,
    write_summary,
    write_topics,
)


class Finished(Protocol):
    """What a finished asynchronous simulation hands over (``AsyncRun``, ``simulation.async_parties.SimulationResult``)."""

    parties: Sequence[Any]
    logs: Sequence[PartyLog]
    wall_seconds: float


STALENESS_MEANING = ("rounds the read counts lagged the reader: 0 in step, positive behind, negative ahead "
                     "(the other party had already published later rounds)")


def write_async_run(
    data: TrainingData,
    spec: TrainSpec,
    sim: Finished,
    out: Path,
    *,
    algorithm: str = "dafed-lda",
    max_delay: float = 0.0,
    fold_in_iterations: int = 50,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Evaluate every party's Φ_Σ of a finished asynchronous run and write ``out``; returns summary.json's content:
    the figures of the model written (party 0's, ``model_of``), each party's in ``parties_detail``."""
    hyper, steps = sim.parties[0].hyper, sim.parties[0].steps
    alpha, beta = sim.parties[0].alpha, sim.parties[0].beta  # the model written is party 0's (α learned or not)
    per_party = [
        evaluate_model(p.phi(), p.alpha, p.corpus, data.test, theta_train=p.theta(), fold_in_iterations=fold_in_iterations, seed=hyper.seed)
        for p in sim.parties
    ]
    # every figure is the model written's (party 0's Φ_Σ, model.npz), as node run and evaluate give it; the mean
    # over the parties' models, which differ where they read different channels or stale counts, kept beside it
    metrics = dict(per_party[0])
    phi = sim.parties[0].phi()
    write_topics(out, topic_table(phi, data.train.vocab, data.train,
                                  prevalence=sim.parties[0].topic_distribution()[1]))
    save_topic_model(out, TopicModelFile(phi=phi, alpha=alpha, beta=beta, vocab=data.train.vocab,
                                         tokenizer=data.tokenizer, algorithm=algorithm))
    staleness = [s for log in sim.logs for s in log.staleness]
    _plots(out, sim, staleness, [m["perplexity"] for m in per_party])
    summary: dict[str, Any] = stable_summary(
        algorithm=algorithm, dataset=data.name, parties=len(sim.parties), topics=spec.topics,
        iterations=spec.iterations, seed=spec.seed, metrics=metrics, wall_seconds=sim.wall_seconds,
        bytes_sent=int(sum(log.bytes_sent for log in sim.logs))) | {
        "perplexity_eq16": metrics["perplexity_eq16"],
        "model_of": sim.parties[0].party_id,
        "perplexity_mean_over_parties": float(np.mean([m["perplexity"] for m in per_party])),
        "steps": steps,
        "max_delay": max_delay,
        "alpha": alpha_json(alpha),
        "beta": beta,
        **({} if not hasattr(sim.parties[0], "clipped_documents") else  # learned α: documents past optim_width
           {"optim_clipped_documents": {p.party_id: p.clipped_documents for p in sim.parties}}),
        "bytes_received": int(sum(log.bytes_received for log in sim.logs)),
        "staleness_histogram": _histogram(staleness),
        "staleness_meaning": STALENESS_MEANING,
        "parties_detail": [
            {
                "party": log.party_id,
                "rounds": log.rounds,
                "sweeps": log.sweeps,
                "planned_sweeps": log.planned_sweeps,
                "stopped_by": log.stopped_by,
                "read_from": sorted(log.read_from),
                "bytes_sent": log.bytes_sent,
                "compute_seconds": round(log.compute_seconds, 3),
                "comm_seconds": round(log.comm_seconds, 3),
                "comm_seconds_per_round": round(log.comm_seconds / max(log.rounds, 1), 4),
                "delay_seconds": round(log.delay_seconds, 3),
                "mean_staleness": float(np.mean(log.staleness)) if log.staleness else 0.0,
            }
            | {k: m[k] for k in m}
            for log, m in zip(sim.logs, per_party)
        ],
    }
    if "macro_f1" in metrics:
        summary["macro_f1"] = metrics["macro_f1"]
    summary |= privacy_summary(sim.parties) | dict(extra or {})
    write_summary(out, summary)
    return summary


def _histogram(values: Sequence[int]) -> dict[str, int]:
    keys, counts = np.unique(np.asarray(values, dtype=np.int64), return_counts=True)
    return {str(int(k)): int(c) for k, c in zip(keys, counts)}


def _plots(out: Path, sim: Finished, staleness: Sequence[int], perplexities: Sequence[float]) -> None:
    if staleness:
        plot_histogram(out / "staleness.png", staleness,
                       xlabel="staleness of a read payload in rounds (negative: the other party was ahead)",
                       title="staleness of the counts each party used")
    parties = [log.party_id for log in sim.logs]
    plot_grouped_bars(out / "rounds.png", parties, {"rounds completed": [log.rounds for log in sim.logs]},
                      ylabel="rounds", title="rounds completed per party (the fastest stops its readers)")
    if max(perplexities) - min(perplexities) > 1e-9 * max(perplexities):  # one bar per distinct model only
        plot_grouped_bars(out / "perplexity_per_party.png", parties, {"held-out perplexity": list(perplexities)},
                          ylabel="held-out perplexity of the party's model",
                          title="each party's model on the test set (parties in different consortia differ)")
