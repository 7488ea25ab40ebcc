"""Class-based TF-IDF and the merge of clusters into K topics, as BERTopic 0.17 computes them (pure numpy).

c-TF-IDF (Grootendorst 2022, Eq. 1; ``bertopic.vectorizers.ClassTfidfTransformer`` with its defaults): for the
word counts X[c, t] of class c, W[c, t] = tf[c, t] · log(1 + A / f_t), tf = X row-normalised (L1), f_t = Σ_c
X[c, t] and A the average number of words per class, truncated to an integer as BERTopic does (``int(mean)``).
A word no class uses has f_t = 0: its weight is 0 (BERTopic's CountVectorizer never keeps such a word).
"""

from __future__ import annotations

import numpy as np

from fedtopic.algorithms.embedding_topics.clustering import unit_rows


def c_tf_idf(counts: np.ndarray) -> np.ndarray:
    """float64[C, V] c-TF-IDF of word counts ``counts`` [C, V] (non-negative; a class without words is a zero row)."""
    x = np.asarray(counts, dtype=np.float64)
    per_class = x.sum(axis=1)
    frequency = x.sum(axis=0)
    average = int(per_class.mean()) if len(per_class) else 0
    with np.errstate(divide="ignore", invalid="ignore"):
        idf = np.where(frequency > 0, np.log(average / frequency + 1.0), 0.0)
        tf = np.where(per_class[:, None] > 0, x / per_class[:, None], 0.0)
    return tf * idf[None, :]


def merge_plan(weights: np.ndarray, sizes: np.ndarray, topics: int) -> np.ndarray:
    """int[C] the topic (0 … topics−1) each of the C clusters joins when the most similar are merged until
    ``topics`` remain, as BERTopic's ``reduce_topics``: average-linkage agglomerative clustering on the cosine
    distance of the clusters' c-TF-IDF rows ``weights`` [C, V]. Topics are numbered by size (``sizes``: documents
    per cluster), largest first, ties by their first cluster; empty clusters join the topic of their nearest
    non-empty one. C ≤ topics: every cluster its own topic, renumbered the same way."""
    c = weights.shape[0]
    live = np.flatnonzero(sizes > 0)
    if len(live) == 0:
        return np.zeros(c, dtype=np.int64)
    unit = unit_rows(weights)
    groups = np.arange(c)
    if len(live) > topics:
        from sklearn.cluster import AgglomerativeClustering

        distance = np.clip(1.0 - unit[live] @ unit[live].T, 0.0, 2.0)
        np.fill_diagonal(distance, 0.0)
        labels = AgglomerativeClustering(n_clusters=topics, metric="precomputed",
                                         linkage="average").fit_predict(distance)
        groups[live] = live[[np.flatnonzero(labels == labels[i])[0] for i in range(len(live))]]
    for i in np.flatnonzero(sizes == 0):  # an empty cluster follows its nearest live one
        groups[i] = groups[live[int(np.argmax(unit[live] @ unit[i]))]]
    roots = np.unique(groups[live])
    size_of = {int(r): int(sizes[groups == r].sum()) for r in roots}
    order = sorted(roots, key=lambda r: (-size_of[int(r)], int(r)))
    number = {int(r): n for n, r in enumerate(order)}
    return np.array([number[int(g)] for g in groups], dtype=np.int64)


def merged(values: np.ndarray, plan: np.ndarray, topics: int) -> np.ndarray:
    """Rows of ``values`` [C, …] summed per topic of ``plan`` into [topics, …]."""
    out = np.zeros((topics, *values.shape[1:]), dtype=np.result_type(values, np.float64))
    np.add.at(out, plan, values)
    return out

