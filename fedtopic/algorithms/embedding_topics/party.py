"""One party of ``fed-embedding-topics``: its embeddings stay here; what it sends are sums (docs/algorithms.md).

Rounds (``step``), each one exchange on its channel:

* round 0, ``moments`` (dense, d + d² + 1): Σx, Σxxᵀ, the document count, for the seeded starts
  (``clustering.starts``);
* rounds 1 … R (R = iterations), ``lloyd`` (dense, k·d + k): per-cluster sums and counts of the party's
  embeddings under the current centroids (one exact Lloyd round of spherical k-means);
* round R + 1, ``words`` (counts, [V, k]): the party's word counts per cluster, summed into the consortium's
  class word counts, from which every party derives c-TF-IDF and merges the k clusters into K topics
  (``ctfidf``).

Setup, ``size`` (counts, [2, 1]): the consortium's documents and tokens, whose bound sizes the words channel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from fedtopic.algorithms.embedding_topics.clustering import (
    assign,
    centroid_shift,
    described,
    lloyd_step,
    lloyd_update,
    moment_update,
    outliers,
    soft_membership,
    starts,
    unit_rows,
)
from fedtopic.algorithms.embedding_topics.ctfidf import c_tf_idf, merge_plan, merged
from fedtopic.algorithms.embedding_topics.embeddings import embed
from fedtopic.algorithms.federated import Channel, Exchange, StepRecord
from fedtopic.corpus.types import Corpus

SETUP_MAX_VALUE = (1 << 40) - 1
CENTROID_SHIFT = "centroid shift (1 − cos)"
"""The Lloyd rounds' quality figure: the largest 1 − cosine between a centroid before and after the round."""


@dataclass(frozen=True)
class Settings:
    """The options every party derives alike: clusters k, topics K, Lloyd rounds, embedding, θ's temperature,
    the outliers' cosine."""

    clusters: int
    topics: int
    rounds: int
    embedding: str
    temperature: float
    outlier_cosine: float
    seed: int


@dataclass
class Topics:
    """The model every party ends with: Φ-like c-TF-IDF weights [K, V], the topic centroids [K, d], documents
    per topic [K], and the cluster → topic plan [k]."""

    weights: np.ndarray
    centroids: np.ndarray
    sizes: np.ndarray
    plan: np.ndarray

    def theta(self, x: np.ndarray, temperature: float) -> np.ndarray:
        """float64[D, K] soft membership of unit embeddings ``x`` (an empty document: uniform)."""
        return soft_membership(x, self.centroids, temperature)


def final_topics(class_counts: np.ndarray, centroids: np.ndarray, sizes: np.ndarray, topics: int) -> Topics:
    """The K topics of the consortium's class word counts [k, V], cluster centroids [k, d] and sizes [k]."""
    plan = merge_plan(c_tf_idf(class_counts), sizes, topics)
    count = int(plan.max()) + 1
    weights = c_tf_idf(merged(class_counts, plan, count))
    topic_centroids = unit_rows(merged(centroids * sizes[:, None], plan, count))
    return Topics(weights, topic_centroids, merged(sizes, plan, count), plan)


class EmbeddingParty:
    """What both forms of a party hold: its embeddings, its copy of the centroids and, after the last round, the
    consortium's topics (``EmbeddingTopicsParty`` without DP; ``ddp_party.EmbeddingTopicsDDPParty`` with it)."""

    def __init__(self, party_id: str, corpus: Corpus, settings: Settings) -> None:
        self.party_id, self.corpus, self.settings = party_id, corpus, settings
        self._x: np.ndarray | None = None
        self.embedded: dict[str, int] = {}  # minilm: texts embedded now and taken from the cache
        self.centroids: np.ndarray | None = None
        self.sizes = np.zeros(settings.clusters)
        self.round = 0
        self.outliers = 0  # documents of this party left out of the c-TF-IDF counts (``clustering.described``)
        self.topics: Topics | None = None

    @property
    def x(self) -> np.ndarray:
        """float64[D, d] this party's unit embeddings (embedded once; the minilm cache keeps them across runs)."""
        if self._x is None:
            self._x = embed(self.corpus, self.settings.embedding, self.settings.seed, self.embedded)
        return self._x

    def _words(self) -> np.ndarray:
        return self.x[np.linalg.norm(self.x, axis=1) > 0]  # empty documents join no cluster

    def done(self) -> bool:
        return self.round > self.settings.rounds + 1

    def top_words_ids(self, n: int) -> np.ndarray | None:
        if self.topics is None:
            return None
        return np.argsort(-self.topics.weights, axis=1, kind="stable")[:, :n]

    def _state(self) -> dict[str, np.ndarray]:
        out = {"round": np.array(self.round), "sizes": self.sizes.copy(), "outliers": np.array(self.outliers)}
        if self.centroids is not None:
            out["centroids"] = self.centroids.copy()
        if self.topics is not None:
            out |= {"weights": self.topics.weights, "topic_centroids": self.topics.centroids,
                    "topic_sizes": self.topics.sizes, "plan": self.topics.plan}
        return out

    def _restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        if "centroids" in arrays and arrays["centroids"].shape[0] != self.settings.clusters:
            raise ValueError("the checkpoint holds another number of clusters")
        self.round, self.outliers = int(arrays["round"]), int(arrays["outliers"])
        self.sizes = np.array(arrays["sizes"], dtype=np.float64)
        self.centroids = None if "centroids" not in arrays else np.array(arrays["centroids"], dtype=np.float64)
        self.topics = None if "weights" not in arrays else Topics(
            np.array(arrays["weights"]), np.array(arrays["topic_centroids"]), np.array(arrays["topic_sizes"]),
            np.array(arrays["plan"], dtype=np.int64))


class EmbeddingTopicsParty(EmbeddingParty):
    """A party without DP: exact sums (under the protection) of its moments, cluster sums and word counts."""

    def __init__(self, party_id: str, corpus: Corpus, settings: Settings) -> None:
        super().__init__(party_id, corpus, settings)
        self.bound = 0  # the words channel's bound on a cell, learnt in setup

    def setup_channels(self, n_parties: int) -> list[Channel]:
        return [Channel("size", "counts", 2, {"shape": [2, 1], "max_value": SETUP_MAX_VALUE, "setup": True})]

    def setup(self, exchange: Exchange) -> None:
        """The consortium's documents and tokens: the words channel's bound on a cell."""
        mine = np.array([[self.corpus.n_docs], [self.corpus.n_tokens]], dtype=np.int64)
        total = np.asarray(exchange.sum("size", 0, mine).value).reshape(-1)
        self.bound = (1 << max(1, int(total[1])).bit_length()) - 1

    def channels(self, n_parties: int) -> list[Channel]:
        d, k, v = self.x.shape[1], self.settings.clusters, self.corpus.n_words
        return [Channel("moments", "dense", d + d * d + 1), Channel("lloyd", "dense", k * d + k),
                Channel("words", "counts", v, {"shape": [v, k], "max_value": self.bound, "every_cell": True})]

    def step(self, round: int, exchange: Exchange) -> StepRecord:
        s, x = self.settings, self._words()
        if round == 0:
            moments = np.asarray(exchange.sum("moments", 0, moment_update(x)).value, dtype=np.float64)
            self.centroids = starts(moments, x.shape[1], s.clusters, s.seed)
            self.round = 1
            return StepRecord(extra={"phase": "moments", **self.embedded})
        assert self.centroids is not None
        if round <= s.rounds:
            summed = np.asarray(exchange.sum("lloyd", round - 1, lloyd_update(x, self.centroids)).value,
                                dtype=np.float64)
            before = self.centroids
            self.centroids, self.sizes = lloyd_step(summed, before)
            self.round = round + 1
            return StepRecord(quality=centroid_shift(before, self.centroids), quality_name=CENTROID_SHIFT,
                              extra={"phase": "lloyd"})
        keep = described(self.x, self.centroids, s.outlier_cosine)
        self.outliers = outliers(self.x, keep)
        counts = class_word_counts(self.corpus, assign(self.x, self.centroids), s.clusters, keep)
        total = np.ascontiguousarray(np.asarray(exchange.sum("words", 0, counts.T).value).reshape(self.corpus.n_words, s.clusters).T)
        self.topics = final_topics(total.astype(np.float64), self.centroids, self.sizes, s.topics)
        self.round = round + 1
        return StepRecord(extra={"phase": "words", "topics": int(self.topics.weights.shape[0]),
                                 "outliers": self.outliers})

    def state(self) -> dict[str, np.ndarray]:
        return self._state() | {"bound": np.array(self.bound)}

    def restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        self._restore(arrays)
        self.bound = int(arrays["bound"])


def class_word_counts(corpus: Corpus, labels: np.ndarray, clusters: int, keep: np.ndarray) -> np.ndarray:
    """int64[k, V] the corpus's word counts per cluster of ``labels`` [D] (documents where ``keep`` is False
    count in none)."""
    doc_of = np.repeat(np.arange(corpus.n_docs), np.diff(corpus.doc_ptr))
    use = keep[doc_of]
    out = np.zeros((clusters, corpus.n_words), dtype=np.int64)
    np.add.at(out, (labels[doc_of[use]], corpus.words[use]), 1)
    return out
