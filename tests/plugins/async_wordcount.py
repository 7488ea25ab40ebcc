"""An asynchronous algorithm defined outside fedtopic, to prove that one is a module and a registry line too.

``async-wordcount``: every party publishes, on its own channel, the counts of its words folded into K columns
(word w counts in column w mod K), the same matrix every round; a party's "model" is the normalised sum of its own
counts and the latest it read from everyone else, Φ[k, w] ∝ Σ_p counts_p[w, k] + β. Trivial as a topic model; what
it shows is that the asynchronous loop, its checkpoints, history and transports (the in-memory board and the
encrypted chain channels) drive any ``AsyncParty``, and the run folder is the algorithm's own.

Registered with ``FEDTOPIC_ALGORITHMS=async-wordcount=plugins.async_wordcount:AsyncWordCount`` and the tests
folder on ``PYTHONPATH``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.asynchronous import (
    AsyncPartyRun,
    AsyncRun,
    ChannelSnapshot,
    RoundReport,
)
from fedtopic.algorithms.base import Algorithm, Mode, TrainSpec, UpdateSpec
from fedtopic.corpus.types import Corpus
from fedtopic.runs.model_run import write_model_run

BETA = 0.01


class WordCountParty:
    """One party: its folded counts and the others' latest."""

    def __init__(self, party_id: str, corpus: Corpus, spec: TrainSpec) -> None:
        self.party_id, self.corpus, self.k = party_id, corpus, spec.topics
        self.round = self.sweeps = 0
        self.steps = 1
        counts = np.zeros((corpus.n_words, self.k), dtype=np.int32)
        np.add.at(counts, (corpus.words, corpus.words % self.k), 1)
        self.counts = counts
        self.others: dict[str, np.ndarray] = {}

    @property
    def vocab(self) -> Sequence[str]:
        return self.corpus.vocab

    def genesis(self) -> np.ndarray:
        return self.own_counts()

    def own_counts(self) -> np.ndarray:
        return self.counts.copy()

    def max_sweeps(self, budget: int) -> int:
        return budget

    def train_round(self, others: Sequence[ChannelSnapshot]) -> RoundReport:
        self.absorb(others)
        self.round += 1
        self.sweeps += self.steps
        return RoundReport(self.round, self.sweeps, self.own_counts(), {s.party: self.round - 1 - s.round
                                                                         for s in others})

    def absorb(self, others: Sequence[ChannelSnapshot]) -> None:
        self.others.update({s.party: np.asarray(s.n_wk) for s in others})

    def phi(self) -> np.ndarray:
        total = self.counts.astype(np.float64) + sum(o.astype(np.float64) for o in self.others.values())
        return ((total + BETA) / (total + BETA).sum(axis=0)).T

    def quality(self) -> tuple[float, str]:
        return float(len(self.others)), "channels_read"

    def top_words_ids(self, n: int) -> np.ndarray:
        return np.argsort(-self.phi(), axis=1, kind="stable")[:, :n]

    def state(self) -> dict[str, np.ndarray]:
        return {"progress": np.array([self.round, self.sweeps])}

    def restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        self.round, self.sweeps = (int(x) for x in arrays["progress"])


class AsyncWordCount(Algorithm):
    name = "async-wordcount"
    summary = "every party publishes its folded word counts; a party's model is the sum of what it read"
    paper = "(a test plugin)"
    modes = frozenset({Mode.async_})
    options = ()
    update = UpdateSpec("counts", "the party's word counts folded into K columns, int32[V,K]")

    def channel_party(self, party_id: str, index: int, corpus: Corpus, spec: TrainSpec, *,
                      secret: bytes | None = None) -> WordCountParty:
        return WordCountParty(party_id, corpus, spec)

    def publication_shape(self, spec: TrainSpec, n_words: int) -> tuple[int, int]:
        return n_words, spec.topics

    def write_async_party(self, out: Path, run: AsyncPartyRun) -> dict[str, Any]:
        return write_model_run(out, phi=run.party.phi(), vocab=run.party.vocab, tokenizer=run.tokenizer,
                               algorithm=self.name, summary={
                                   "dataset": run.dataset, "parties": run.n_parties, "topics": run.spec.topics,
                                   "iterations": run.spec.iterations, "seed": run.spec.seed,
                                   "rounds": run.log.rounds})

    def write_async_simulation(self, out: Path, run: AsyncRun) -> dict[str, Any]:
        first = run.parties[0]
        return write_model_run(out, phi=first.phi(), vocab=first.vocab, tokenizer=run.data.tokenizer,
                               algorithm=self.name, summary={
                                   "dataset": run.data.name, "parties": len(run.parties), "topics": run.spec.topics,
                                   "iterations": run.spec.iterations, "seed": run.spec.seed,
                                   "wall_seconds": run.wall_seconds,
                                   "bytes_sent": int(sum(log.bytes_sent for log in run.logs)),
                                   "rounds": [log.rounds for log in run.logs], "transport": run.extra["transport"]})
