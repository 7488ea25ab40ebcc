"""The centralised twin of ``fed-embedding-topics``: the same rounds in one process, the parties' statistics
summed in party order as the aggregator sums them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedtopic.algorithms.base import Fitted, IterationCallback
from fedtopic.algorithms.embedding_topics.clustering import (
    assign,
    described,
    lloyd_step,
    lloyd_update,
    moment_update,
    outliers,
    starts,
)
from fedtopic.algorithms.embedding_topics.embeddings import embed
from fedtopic.algorithms.embedding_topics.party import (
    Settings,
    class_word_counts,
    final_topics,
)
from fedtopic.algorithms.model import TopicModel
from fedtopic.corpus.types import Corpus


def pooled_rounds(name: str, parts: Sequence[Corpus], s: Settings,
                  callback: IterationCallback | None = None) -> Fitted:
    """The model and θ (rows: the parties' documents in party order) of the federated rounds run on ``parts``."""
    xs = [embed(p, s.embedding, s.seed) for p in parts]
    live = [x[np.linalg.norm(x, axis=1) > 0] for x in xs]
    d = xs[0].shape[1]
    moments = sum(moment_update(x) for x in live)  # 0 + u_1 + u_2 …: the aggregator's order, bit for bit
    centroids = starts(moments, d, s.clusters, s.seed)
    sizes = np.zeros(s.clusters)
    for r in range(1, s.rounds + 1):
        centroids, sizes = lloyd_step(sum(lloyd_update(x, centroids) for x in live), centroids)
        if callback is not None:
            callback(0, r, None)
    keeps = [described(x, centroids, s.outlier_cosine) for x in xs]
    counts = sum(class_word_counts(p, assign(x, centroids), s.clusters, keep) for p, x, keep in zip(parts, xs, keeps))
    left_out = sum(outliers(x, keep) for x, keep in zip(xs, keeps))
    topics = final_topics(counts.astype(np.float64), centroids, sizes, s.topics)
    theta = np.vstack([topics.theta(x, s.temperature) for x in xs])
    model = TopicModel(_phi(topics.weights), 0.0, 0.0, parts[0].vocab, algorithm=name)
    return Fitted(model, theta, {"weights": topics.weights, "centroids": topics.centroids, "clusters": s.clusters,
                                  "outlier_documents": left_out})


def _phi(weights: np.ndarray) -> np.ndarray:
    """Φ [K, V]: c-TF-IDF rows normalised (a topic without weight: uniform)."""
    rows = weights.sum(axis=1, keepdims=True)
    return np.where(rows > 0, weights / np.where(rows > 0, rows, 1.0), 1.0 / weights.shape[1])
