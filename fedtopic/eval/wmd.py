"""Word Mover's Distance between topic descriptions and gFedNTM's AMWMD (Calvo-Bartolomé et al., Eq. 7).

A topic's text description is its top words. As in gensim's ``wmdistance`` (the paper's footnote), each
description is a normalised bag of its words that have a vector (the others are dropped), and WMD is the
earth mover's distance between the two bags with the Euclidean distance between word vectors as ground cost
(Kusner et al. 2015). We use GloVe 6B 50-d scaled to unit length, so a ground cost is √(2 − 2·cos).

Exactness: the transport problem is solved exactly, by the Hungarian algorithm when both bags have the same
number of words (uniform weights 1/n on both sides: an optimal plan is a permutation, Birkhoff–von Neumann)
and by the HiGHS simplex (``scipy.optimize.linprog``) otherwise. No approximation (no Sinkhorn).

AMWMD^(l, eval) = (1/K) Σ_k min_k′ WMD(TD_k^(l), TD_k′^(eval)): Eq. 7 prints the sum, the name says average;
we report the average, so that models with different K compare.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment, linprog

from fedtopic.errors import EvalError
from fedtopic.eval.embeddings import WordVectors


def _bag(words: Sequence[str], vectors: WordVectors) -> np.ndarray:
    """float[n, d]: the vectors of the distinct words that have one."""
    rows = vectors.rows(list(dict.fromkeys(words)))
    return vectors.unit[rows[rows >= 0]].astype(np.float64)


def earth_movers(a: np.ndarray, b: np.ndarray) -> float:
    """Exact EMD between uniform bags of points a float[n, d] and b float[m, d] (Euclidean ground cost)."""
    if len(a) == 0 or len(b) == 0:
        raise EvalError("a topic description has no word with a vector")
    cost = np.sqrt(np.maximum(((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=2), 0.0))
    n, m = cost.shape
    if n == m:
        rows, cols = linear_sum_assignment(cost)
        return float(cost[rows, cols].sum() / n)
    # flows f_ij ≥ 0 with row sums 1/n and column sums 1/m
    eq = np.zeros((n + m, n * m))
    for i in range(n):
        eq[i, i * m:(i + 1) * m] = 1.0
    for j in range(m):
        eq[n + j, j::m] = 1.0
    rhs = np.concatenate([np.full(n, 1.0 / n), np.full(m, 1.0 / m)])
    res = linprog(cost.ravel(), A_eq=eq, b_eq=rhs, bounds=(0, None), method="highs")
    if res.status != 0:
        raise EvalError(f"transport problem not solved: {res.message}")
    return float(res.fun)


def topic_wmd(words_a: Sequence[str], words_b: Sequence[str], vectors: WordVectors) -> float:
    """WMD between two topic descriptions (their top words)."""
    return earth_movers(_bag(words_a, vectors), _bag(words_b, vectors))


def amwmd(node_topics: Sequence[Sequence[str]], eval_topics: Sequence[Sequence[str]], vectors: WordVectors) -> float:
    """Eq. 7 averaged over the node model's K topics: how far, on average, each of its topics is from the
    nearest topic of the model under evaluation (0 when that model is the node's own)."""
    bags_b = [_bag(t, vectors) for t in eval_topics]
    return float(np.mean([min(earth_movers(_bag(t, vectors), b) for b in bags_b) for t in node_topics]))
