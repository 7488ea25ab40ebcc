"""iFTM's master (Jiang et al. §3.1.5, §3.2, Algs. 3–5) as pure numpy: normalise, compare, merge, compose.

* **Topic-wise normalisation** (§3.1.5): a party sends M̂_p, its privatised
  word-topic weights with every topic row scaled to sum to 1 (negative weights,
  which Laplace noise can leave, are cut to 0 first), so the master never sees
  absolute word frequencies; the data amount n_p is sent beside it and is
  something the master learns.
* **Similarity** (Eq. 29): weighted Jaccard over two topics' top-L words:
  Σ_common min(p_i, p_j) / (Σ_topL p_i + Σ_topL p_j − Σ_common min(p_i, p_j)).
* **Integration** (Alg. 3), applied party by party in party order (Alg. 5):
  concatenate the global model and the next local model, join every pair with
  ρ ≥ ξ by union–find, replace each joined set by the average of its topics
  weighted by the data amount behind each (a party's topics weigh n_p; a merged
  topic weighs the sum of its members), renormalised. Parties may have
  different K; the global model's size follows from the merge.
* **Composition** (Alg. 4): for each local topic, in order, the most similar
  global topic not used yet replaces it if ρ ≥ ξ; otherwise the local topic
  stays. Every global topic is used at most once.

Similarities over all pairs are computed from an inverted index of the top-L
words (topics sharing no top word are 0 without being compared), so 3 parties
× K = 1,000 topics cost seconds; see benchmarks/.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fedtopic.errors import ModelError


def normalize_topics(m: np.ndarray) -> np.ndarray:
    """float64[K,V]: each row of ``m`` with negatives cut to 0, scaled to sum 1 (an empty row becomes uniform)."""
    pos = np.maximum(np.asarray(m, dtype=np.float64), 0.0)
    sums = pos.sum(axis=1, keepdims=True)
    out = np.divide(pos, sums, out=np.full_like(pos, 1.0 / pos.shape[1]), where=sums > 0)
    return out


def _top(m: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """(word ids int64[K,L], probabilities float64[K,L]) of each row's top-L words."""
    top = min(top, m.shape[1])
    idx = np.argpartition(-m, top - 1, axis=1)[:, :top]
    return idx, np.take_along_axis(m, idx, axis=1)


def similarity(a: np.ndarray, b: np.ndarray, top: int) -> np.ndarray:
    """float64[Ka,Kb]: Eq. 29's ρ between every topic of ``a`` and every topic of ``b`` (rows normalised)."""
    ia, pa = _top(a, top)
    ib, pb = _top(b, top)
    common = np.zeros((a.shape[0], b.shape[0]))
    # inverted index over b's top words: for each of a's top entries, the b topics that share its word
    order = np.argsort(ib.ravel(), kind="stable")
    words_b = ib.ravel()[order]
    topic_b = np.repeat(np.arange(b.shape[0]), ib.shape[1])[order]
    prob_b = pb.ravel()[order]
    lo = np.searchsorted(words_b, ia.ravel(), side="left")
    hi = np.searchsorted(words_b, ia.ravel(), side="right")
    topic_a = np.repeat(np.arange(a.shape[0]), ia.shape[1])
    for e in np.flatnonzero(hi > lo):
        sl = slice(lo[e], hi[e])
        common[topic_a[e], topic_b[sl]] += np.minimum(pa.ravel()[e], prob_b[sl])
    denom = pa.sum(axis=1)[:, None] + pb.sum(axis=1)[None, :] - common
    return np.divide(common, denom, out=np.zeros_like(common), where=denom > 0)


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


@dataclass(frozen=True)
class GlobalModel:
    """M*: topics float64[K*,V] (rows sum to 1) and the data amount behind each topic float64[K*]."""

    topics: np.ndarray
    weights: np.ndarray


def integrate(global_model: GlobalModel | None, local: np.ndarray, amount: float, *, xi: float,
              top: int) -> GlobalModel:
    """Alg. 3: merge normalised local topics float64[K_p,V] (each weighing ``amount``) into ``global_model``."""
    check_merge_params(xi, top)
    local = normalize_topics(local)
    if global_model is None:
        topics, weights = local, np.full(local.shape[0], float(amount))
    else:
        if global_model.topics.shape[1] != local.shape[1]:
            raise ModelError(f"local model has V={local.shape[1]}, the global model V={global_model.topics.shape[1]}")
        topics = np.vstack([global_model.topics, local])
        weights = np.concatenate([global_model.weights, np.full(local.shape[0], float(amount))])
    rho = similarity(topics, topics, top)
    uf = _UnionFind(topics.shape[0])
    for i, j in zip(*np.nonzero(np.triu(rho >= xi, k=1))):
        uf.union(int(i), int(j))
    roots = [uf.find(i) for i in range(topics.shape[0])]
    out_topics, out_weights = [], []
    for root in sorted(set(roots)):  # sets in order of their first topic: the same input, the same output
        members = [i for i, r in enumerate(roots) if r == root]
        w = weights[members]
        merged = (w[:, None] * topics[members]).sum(axis=0) / w.sum()
        out_topics.append(merged / merged.sum())
        out_weights.append(w.sum())
    return GlobalModel(np.array(out_topics), np.array(out_weights))


def integrate_all(locals_: Sequence[tuple[np.ndarray, float]], *, xi: float, top: int) -> GlobalModel:
    """Alg. 5 lines 2–6: every party's (M̂_p, n_p) merged in party order into one global model."""
    if not locals_:
        raise ModelError("no local model to integrate")
    model: GlobalModel | None = None
    for local, amount in locals_:
        model = integrate(model, local, amount, xi=xi, top=top)
    assert model is not None
    return model


def compose(global_model: GlobalModel, local: np.ndarray, *, xi: float, top: int) -> np.ndarray:
    """Alg. 4: the party's new local model float64[K_p,V] from M* and its own normalised M̂_p."""
    local = normalize_topics(local)
    rho = similarity(local, global_model.topics, top)
    available = np.ones(global_model.topics.shape[0], dtype=bool)
    out = local.copy()
    for k in range(local.shape[0]):
        scores = np.where(available, rho[k], -1.0)
        best = int(np.argmax(scores))
        if scores[best] >= xi:
            out[k] = global_model.topics[best]
            available[best] = False
    return out


def check_merge_params(xi: float, top: int) -> None:
    """ModelError unless 0 < ξ ≤ 1 and L ≥ 1."""
    if not 0.0 < xi <= 1.0:
        raise ModelError(f"xi (the similarity threshold ξ) must be in (0, 1], got {xi}")
    if top < 1:
        raise ModelError(f"top_words (L) must be at least 1, got {top}")
