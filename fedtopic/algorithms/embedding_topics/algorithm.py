"""``fed-embedding-topics``: embed, cluster, c-TF-IDF (BERTopic's pipeline) with every statistic a sum across the
parties; its centralised twin (`train`) runs the same rounds on the pooled parties (docs/algorithms.md)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.base import (
    Algorithm,
    Fitted,
    IterationCallback,
    Mode,
    TrainSpec,
    UpdateSpec,
)
from fedtopic.algorithms.capabilities import SweepMetrics, TrainLog, no_sweep_metrics
from fedtopic.algorithms.dp_sgd import check_distributed_protection
from fedtopic.algorithms.embedding_topics.dp import EmbeddingDP
from fedtopic.algorithms.embedding_topics.options import OPTIONS, settings_of
from fedtopic.algorithms.embedding_topics.party import (
    EmbeddingParty,
    EmbeddingTopicsParty,
)
from fedtopic.algorithms.federated import ConsortiumRun, PartyRun
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ConfigError


class FedEmbeddingTopics(Algorithm):
    name = "fed-embedding-topics"
    summary = ("BERTopic's approach across parties: local sentence embeddings, spherical k-means on summed "
               "statistics, class-based TF-IDF of summed word counts")
    paper = "Grootendorst 2022 (BERTopic, Eq. 1); Urania (arXiv 2506.04681) for the private pipeline"
    modes = frozenset({Mode.centralised, Mode.sync})
    options = OPTIONS
    update = UpdateSpec("dense", "per-cluster embedding sums and counts (and per-cluster word counts once)")
    family = "embedding"

    def check_data(self, parts: Sequence[Corpus], spec: TrainSpec) -> None:
        super().check_data(parts, spec)
        s = settings_of(spec)
        for i, part in enumerate(parts):
            if part.n_tokens == 0:
                raise ConfigError(f"party {i + 1} has no words in its documents: nothing to embed or count")
        documents = sum(int((np.diff(p.doc_ptr) > 0).sum()) for p in parts)
        if documents < s.clusters:
            raise ConfigError(f"{s.clusters} clusters need at least as many non-empty documents; the consortium "
                              f"has {documents}")

    def check_mode_options(self, spec: TrainSpec, mode: Mode) -> None:
        """dp.distributed is the consortium's mechanism; the centralised twin is exact."""
        if mode is Mode.centralised and EmbeddingDP.from_options(spec.options) is not None:
            raise ConfigError("dp.distributed is the consortium's mechanism (noise shares under mask): run it with "
                              "simulate or node run --protection mask; train is the exact pooled twin")

    def headline(self, summary: Any) -> str:
        from fedtopic.algorithms.base import metric

        return f"NPMI {metric(summary, 'npmi', '.3f')}, diversity {metric(summary, 'topic_diversity', '.2f')}"

    # centralised twin ------------------------------------------------------------------------
    def fit(self, parts: Sequence[Corpus], spec: TrainSpec,
            callback: IterationCallback | None = None) -> list[Fitted]:
        """The federated rounds on the pooled parties, each party's statistics summed in party order (the
        aggregator's order): the federated run's model, bit for bit under ``none``."""
        from fedtopic.algorithms.embedding_topics.twin import pooled_rounds

        self.check_mode_options(spec, Mode.centralised)
        return [pooled_rounds(self.name, parts, settings_of(spec), callback)]

    def sweep_metrics(self, data: Any, spec: TrainSpec, eval_every: int) -> SweepMetrics:
        return no_sweep_metrics

    def write_interrupted(self, out: Path, data: Any, spec: TrainSpec, model: Any, sweeps: int) -> str | None:
        return None  # the clusters mean nothing until their words are counted

    def write_train(self, out: Path, data: Any, spec: TrainSpec, fitted: Sequence[Fitted],
                    log: TrainLog) -> dict[str, Any]:
        from fedtopic.algorithms.embedding_topics.report import write_run

        (one,) = fitted
        return write_run(out, self.name, data, spec, one.extra["weights"], one.theta, one.extra["centroids"],
                         {"wall_seconds": log.train_seconds, "train_seconds": log.train_seconds, "bytes_sent": 0,
                          "clusters": one.extra["clusters"], "outlier_documents": one.extra["outlier_documents"]})

    # federated -------------------------------------------------------------------------------
    def party(self, party_id: str, index: int, corpus: Corpus, spec: TrainSpec, *,
              secret: bytes | None = None) -> EmbeddingParty:
        """The exact party, or under ``dp.distributed`` the one whose releases carry Skellam shares (``dp``)."""
        dp = EmbeddingDP.from_options(spec.options)
        if dp is None:
            return EmbeddingTopicsParty(party_id, corpus, settings_of(spec))
        from fedtopic.algorithms.embedding_topics.ddp_party import (
            EmbeddingTopicsDDPParty,
        )

        return EmbeddingTopicsDDPParty(party_id, index, corpus, settings_of(spec), dp, secret)

    def check_protection(self, spec: TrainSpec, protection: str, n_parties: int) -> None:
        """As every algorithm, and distributed DP only under a protection whose aggregator sees only the sum."""
        super().check_protection(spec, protection, n_parties)
        dp = EmbeddingDP.from_options(spec.options)
        if dp is not None:
            check_distributed_protection(protection)
            dp.planned(n_parties)

    def rounds(self, spec: TrainSpec) -> int:
        """The moments round, the Lloyd rounds and the words round; under DP the R + 1 Lloyd rounds, the vocabulary
        round and the words round."""
        return spec.iterations + (3 if EmbeddingDP.from_options(spec.options) is not None else 2)

    def write_simulation(self, out: Path, run: ConsortiumRun) -> dict[str, Any]:
        from fedtopic.algorithms.embedding_topics.report import write_run

        first = run.parties[0]
        same = all(np.array_equal(p.topics.weights, first.topics.weights) for p in run.parties)
        theta = np.vstack([p.topics.theta(p.x, p.settings.temperature) for p in run.parties])
        return write_run(out, self.name, run.data, run.spec, first.topics.weights, theta, first.topics.centroids, {
            "wall_seconds": run.wall_seconds, "protection": run.protection, "parties_hold_same_model": same,
            "bytes_sent": int(sum(r.get("bytes_up", 0) for rows in run.histories for r in rows)),
            "rounds": len(run.histories[0]), "clusters": first.settings.clusters,
            "outlier_documents": sum(p.outliers for p in run.parties)} | _privacy(run.parties))

    def write_party(self, out: Path, run: PartyRun) -> dict[str, Any]:
        from fedtopic.algorithms.embedding_topics.report import write_party_run
        from fedtopic.algorithms.federated import history_totals

        return write_party_run(out, self.name, run, history_totals(run.history) | _privacy([run.party])
                               | {"outlier_documents": run.party.outliers}) \
            | {"run": str(out)}


def _privacy(parties: Sequence[Any]) -> dict[str, Any]:
    """summary.json's ``privacy`` (party → what its documents spent) under DP; nothing otherwise."""
    from fedtopic.algorithms.embedding_topics.ddp_party import EmbeddingTopicsDDPParty

    if not isinstance(parties[0], EmbeddingTopicsDDPParty):
        return {}
    return {"privacy": {p.party_id: p.privacy() for p in parties}}
