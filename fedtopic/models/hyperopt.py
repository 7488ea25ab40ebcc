"""Learned Dirichlet priors for Gibbs LDA: Minka's fixed point, from count histograms that parties can sum.

Asymmetric α (Minka 2000, "Estimating a Dirichlet distribution", Eq. 55 with the digamma differences of
Wallach 2008, §2.2), one step of ``ALPHA_STEPS`` inner iterations every ``optim_interval`` sweeps, as tomotopy's
``LDAModel(optim_interval=10)`` does:

    α_k ← max(ε, α_k · Σ_d [ψ(n_dk + α_k) − ψ(α_k)] / Σ_d [ψ(N_d + Σα) − ψ(Σα)])

Both sums depend on the documents only through how many documents hold n tokens of topic k and how many have
length n, so they are computed from the histograms ``DocTopicHistogram`` (integers, summable across parties:
the federated algorithms add theirs and every party then takes the same step).

Symmetric β (Minka's fixed point for a symmetric Dirichlet, as Mallet's ``--optimize-interval`` learns β):

    β ← β · Σ_k Σ_w [ψ(N_wk + β) − ψ(β)] / (V · Σ_k [ψ(N_k + Vβ) − ψ(Vβ)])

from the word-topic counts every party already holds in sum. Choices written down: tomotopy learns α only
(its η stays as given), so β is learned only on request (``optim_beta``); β stays symmetric, since Wallach,
Mimno & McCallum (2009, "Rethinking LDA: why priors matter") found an asymmetric β no better than a symmetric one
and it would put a V-vector into every kernel. ε = 1e-5 keeps a topic that no document uses alive.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import digamma

from fedtopic.errors import ModelError

ALPHA_STEPS = 10  # fixed-point iterations per optimisation (tomotopy's)
ALPHA_FLOOR = 1e-5


@dataclass(frozen=True)
class DocTopicHistogram:
    """topic_counts int64[K, L]: documents holding n tokens of topic k at [k, n] (n ≥ 1; column 0 unused);
    lengths int64[L]: documents of length n at [n]. L = the longest document + 1."""

    topic_counts: np.ndarray
    lengths: np.ndarray

    def __add__(self, other: "DocTopicHistogram") -> "DocTopicHistogram":
        width = max(self.lengths.shape[0], other.lengths.shape[0])
        return DocTopicHistogram(_pad(self.topic_counts, width) + _pad(other.topic_counts, width),
                                 _pad(self.lengths, width) + _pad(other.lengths, width))


def _pad(array: np.ndarray, width: int) -> np.ndarray:
    pad = [(0, 0)] * (array.ndim - 1) + [(0, width - array.shape[-1])]
    return np.pad(array, pad)


def doc_topic_histogram(n_dk: np.ndarray) -> DocTopicHistogram:
    """The histograms of a party's document-topic counts n_dk int[D, K]."""
    n_dk = np.asarray(n_dk)
    if n_dk.ndim != 2:
        raise ModelError(f"n_dk must be [D, K], got shape {n_dk.shape}")
    lengths = n_dk.sum(axis=1, dtype=np.int64)
    width = int(lengths.max(initial=0)) + 1
    topic_counts = np.stack([np.bincount(column, minlength=width) for column in n_dk.T])  # no [D, K] temporary
    return DocTopicHistogram(topic_counts, np.bincount(lengths, minlength=width))


def histogram_cells(histogram: DocTopicHistogram, width: int) -> np.ndarray:
    """int64[K + 1, width]: the topic histograms' rows, then the lengths' row, zero-padded to ``width`` (what a
    party sends on a counts channel; cells add up as the histograms do)."""
    n_topics, own = histogram.topic_counts.shape
    if own > width:
        raise ModelError(f"a document of {own - 1} tokens does not fit histograms of width {width}")
    cells = np.zeros((n_topics + 1, width), dtype=np.int64)
    cells[:-1, :own] = histogram.topic_counts
    cells[-1, : histogram.lengths.shape[0]] = histogram.lengths
    return cells


def histogram_from_cells(cells: np.ndarray) -> DocTopicHistogram:
    """The histograms of ``histogram_cells``' layout (int[K + 1, width])."""
    cells = np.asarray(cells, dtype=np.int64)
    return DocTopicHistogram(cells[:-1], cells[-1])


def _digamma_sum(counts: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Σ_n counts[r, n] · (ψ(n + a_r) − ψ(a_r)) for every row r; counts [R, L], offsets a [R]."""
    rows, ns = np.nonzero(counts[:, 1:])
    ns = ns + 1
    a = offsets[rows]
    terms = counts[rows, ns] * (digamma(ns + a) - digamma(a))
    return np.bincount(rows, weights=terms, minlength=counts.shape[0])


def optimize_alpha(alpha: np.ndarray, histogram: DocTopicHistogram, steps: int = ALPHA_STEPS) -> np.ndarray:
    """float64[K]: ``steps`` fixed-point iterations of asymmetric α from float64[K] α (Minka Eq. 55)."""
    alpha = np.asarray(alpha, dtype=np.float64).copy()
    if alpha.shape != (histogram.topic_counts.shape[0],):
        raise ModelError(f"alpha has shape {alpha.shape}, the histogram {histogram.topic_counts.shape[0]} topics")
    lengths = histogram.lengths[np.newaxis, :]
    for _ in range(steps):
        denominator = float(_digamma_sum(lengths, np.array([alpha.sum()]))[0])
        if denominator <= 0:  # no tokens at all: nothing to learn from
            return alpha
        alpha = np.maximum(alpha * _digamma_sum(histogram.topic_counts, alpha) / denominator, ALPHA_FLOOR)
    return alpha


def optimize_beta(beta: float, n_wk: np.ndarray, steps: int = ALPHA_STEPS) -> float:
    """Symmetric β after ``steps`` fixed-point iterations from the word-topic counts n_wk int[V, K]."""
    n_wk = np.asarray(n_wk)
    n_words = n_wk.shape[0]
    cells = np.bincount(n_wk.ravel().astype(np.int64))[np.newaxis, :]  # how many (w, k) cells hold n
    totals = np.bincount(n_wk.sum(axis=0, dtype=np.int64))[np.newaxis, :]  # how many topics hold n tokens
    beta = float(beta)
    for _ in range(steps):
        denominator = n_words * float(_digamma_sum(totals, np.array([n_words * beta]))[0])
        if denominator <= 0:
            return beta
        beta = max(beta * float(_digamma_sum(cells, np.array([beta]))[0]) / denominator, ALPHA_FLOOR)
    return beta
