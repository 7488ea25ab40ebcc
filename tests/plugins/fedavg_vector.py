"""A federated algorithm defined outside fedtopic, to prove that adding one is one module and one registry line.

``fedavg-vector``: every party holds its documents' word distribution f_p (float64[V]); the consortium agrees
on their document-weighted mean by federated averaging of one dense vector, x ← x + η (Σ n_p f_p / Σ n_p − x),
for ``iterations`` rounds from x⁽⁰⁾ = uniform. Each round a party sends [n_p (f_p − x), n_p] on one dense
channel. The "model" is one topic (x) beside K − 1 uniform ones: enough to write a run folder.

Option ``crossed=1`` sends the two parts on two channels, ``mean`` (n_p (f_p − x)) and ``count`` (n_p), each
party starting one exchange (``Exchange.start``) and summing the other meanwhile: even party indices start
``mean``, odd ones ``count``. A ``start`` that waited for its round would deadlock, each half of the parties
blocked in the round the other half has not sent to.

Registered for a run with ``FEDTOPIC_ALGORITHMS=fedavg-vector=plugins.fedavg_vector:FedAvgVector`` and the tests
folder on ``PYTHONPATH``; no module of fedtopic names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import Algorithm, Mode, Option, TrainSpec, UpdateSpec
from fedtopic.algorithms.federated import (
    Channel,
    ConsortiumRun,
    Exchange,
    PartyRun,
    StepRecord,
    history_totals,
)
from fedtopic.corpus.types import Corpus
from fedtopic.runs.model_run import write_model_run


class VectorParty:
    """One party: its word distribution and its copy of the consensus x."""

    def __init__(self, party_id: str, corpus: Corpus, spec: TrainSpec, index: int = 0) -> None:
        self.party_id, self.spec, self.index = party_id, spec, index
        self.crossed = bool(spec.options.get("crossed", 0))
        counts = np.bincount(corpus.words, minlength=corpus.n_words).astype(np.float64)
        self.n = float(corpus.n_docs)
        self.f = counts / max(counts.sum(), 1.0)
        self.x = np.full(corpus.n_words, 1.0 / corpus.n_words)
        self.round = 0

    def channels(self, n_parties: int) -> list[Channel]:
        if self.crossed:
            return [Channel("mean", "dense", self.x.size), Channel("count", "dense", 1)]
        return [Channel("mean", "dense", self.x.size + 1)]

    def setup(self, exchange: Exchange) -> None:
        """Nothing to exchange before round 0."""

    def step(self, round: int, exchange: Exchange) -> StepRecord:
        if self.crossed:
            parts = {"mean": self.n * (self.f - self.x), "count": np.array([self.n])}
            first, second = ("mean", "count") if self.index % 2 == 0 else ("count", "mean")
            flight = exchange.start(first, round, parts[first])
            sums = {second: exchange.sum(second, round, parts[second]).value, first: flight.result().value}
            total = np.concatenate([sums["mean"], sums["count"]])
        else:
            total = exchange.sum("mean", round, np.concatenate([self.n * (self.f - self.x), [self.n]])).value
        self.x = self.x + float(self.spec.options["rate"]) * total[:-1] / total[-1]
        self.round = round + 1
        return StepRecord(quality=float(np.abs(self.f - self.x).sum()), quality_name="l1_to_own")

    def done(self) -> bool:
        return self.round >= self.spec.iterations

    def state(self) -> dict[str, np.ndarray]:
        return {"x": self.x.copy(), "round": np.array(self.round)}

    def restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        if arrays["x"].shape != self.x.shape:
            raise ValueError("the checkpoint's vector has another length")
        self.x, self.round = arrays["x"].copy(), int(arrays["round"])

    def top_words_ids(self, n: int) -> np.ndarray:
        return np.argsort(-self.x, kind="stable")[None, :n]


def _phi(x: np.ndarray, topics: int) -> np.ndarray:
    return np.vstack([x / x.sum()] + [np.full(x.size, 1.0 / x.size)] * (topics - 1))


class FedAvgVector(Algorithm):
    name = "fedavg-vector"
    summary = "federated averaging of the parties' word distributions (a test plugin)"
    paper = "none: the runtime's test algorithm"
    modes = frozenset({Mode.sync})
    options = (Option("rate", float, 0.5, "step size η", minimum=0.0, exclusive_minimum=True, maximum=1.0),
               Option("crossed", int, 0, "1: two channels, each party starting one exchange and summing the other "
                      "meanwhile", minimum=0, maximum=1))
    update = UpdateSpec("dense", "[n_p (f_p − x), n_p] float64", ("none", "mask"))

    def party(self, party_id: str, index: int, corpus: Corpus, spec: TrainSpec, *,
              secret: bytes | None = None) -> VectorParty:
        return VectorParty(party_id, corpus, spec, index)

    def _write(self, out: Path, x: np.ndarray, vocab: Any, tokenizer: Any, spec: TrainSpec,
               summary: dict[str, Any]) -> dict[str, Any]:
        return write_model_run(out, phi=_phi(x, spec.topics), vocab=vocab, tokenizer=tokenizer, algorithm=self.name,
                               summary={"topics": spec.topics, "iterations": spec.iterations, "seed": spec.seed}
                               | summary)

    def write_simulation(self, out: Path, run: ConsortiumRun) -> dict[str, Any]:
        x = run.parties[0].x
        same = all(np.array_equal(p.x, x) for p in run.parties)
        return self._write(out, x, run.data.train.vocab, run.data.tokenizer, run.spec, {
            "dataset": run.data.name, "parties": len(run.parties), "wall_seconds": run.wall_seconds,
            "bytes_sent": int(sum(r["bytes_up"] for rows in run.histories for r in rows)),
            "rounds": len(run.histories[0]), "parties_hold_same_x": same, "protection": run.protection})

    def write_party(self, out: Path, run: PartyRun) -> dict[str, Any]:
        summary = self._write(out, run.party.x, run.train.vocab, run.tokenizer, run.spec, {
            "dataset": run.dataset, "parties": run.n_parties, "party": run.party.party_id,
            "protection": run.protection, **history_totals(run.history)})
        return summary | {"run": str(out)}
