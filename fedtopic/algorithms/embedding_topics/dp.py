"""Distributed DP for ``fed-embedding-topics`` (``--opt dp.distributed=true``): every statistic the consortium sums
is a Skellam-noised release of per-document parts of ℓ2 norm ≤ 1, and only the masked sum is seen.

Releases (each document takes part in every one; no subsampling, so no amplification is claimed):

* rounds 0 … R, ``lloyd``: document j's part is its unit embedding x_j placed in the block of its cluster
  (int[k·d]); the noisy per-cluster sums S̃_c = S_c + N_c give the next centroids. Round 0 starts from seeded
  random directions (``random_starts``): without DP the starts come from summed second moments, which under DP
  would cost a d²-cell release whose noise swamps the covariance of a few thousand documents; from random
  directions round 0's assignment is a random-hyperplane partition and its sums already point into the
  data's principal subspace (one power-iteration step);
* round R + 1, ``vocab``: document j's part is its m keywords (``dp.words``), 1/√m each, in the cells of the
  vocabulary (float[V]): the consortium's noisy keyword totals, of which the N largest (``dp.candidates``) that
  stand 4 noise deviations above zero are the candidate words every party derives alike (``candidates``). A document's keywords are KeyBERT's (Grootendorst 2020): its m
  distinct words whose word embeddings (``embeddings.embed_words``) are nearest its own embedding, a choice made
  where the document is and costing nothing. Its m most frequent words (Urania's keyword histograms) are mostly
  the words every topic uses: on 20newsgroups their exact class counts cap c-TF-IDF's NPMI at 0.21, KeyBERT's
  at 0.30 (the exact run: 0.31);
* round R + 2, ``words``: document j's part is its keywords among the candidates, each cos φ/√m in the block of
  its cluster (int[k·N], a block's cells past the candidates 0), and sin φ in its cluster's size cell (int[k]): the noisy class keyword counts and
  documents per cluster. It carries the noise σ/√2 (``WORDS_WEIGHT``), since the topics' words are what the run
  is for. Counting only candidates is what makes the words readable: at document-level ε = 1 on 11k documents a
  word outside the first few hundred has fewer keyword uses than the noise of one cell, and c-TF-IDF's idf favours
  exactly such rare words, so over the whole vocabulary the topics' words were noise (NPMI −0.55).

Post-processing, which costs no privacy: a centroid is S̃_c / √(‖S̃_c‖² − d·σ̂²), the noisy sum over an unbiased
estimate of ‖S_c‖ (so a small cluster, whose noisy sum's length is mostly noise, is not shrunk against the large
ones; a document's score x·S̃_c carries noise of deviation σ̂ only, whatever d); a cluster whose estimate is within
3 deviations of what noise alone gives keeps its centroid. Negative noisy counts are read as 0.

Accounting, per document: R + 3 releases of a sum with Skellam noise of variance 2·c·λ (c the contributors that
came), Δ2 = s + √cells and Δ1 = s√cells + cells after truncation in fixed point (``dp_sgd``'s argument, s =
2^16), composed in RDP (Agarwal, Kairouz & Liu 2021, Thm. 3.5) and converted at δ. σ is calibrated so that the
planned run spends ``dp.epsilon``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedtopic.algorithms.base import Option, OptionValue
from fedtopic.algorithms.dp_sgd import DP_SGD_OPTIONS
from fedtopic.errors import ConfigError, TrainingError
from fedtopic.privacy.rdp import DEFAULT_ORDERS, epsilon_from_rdp
from fedtopic.privacy.skellam import (
    bounded_shares,
    composed_rdp,
    planned_contributors,
    share_bound,
    share_lambda,
)

SCALE = 1 << 16
"""s: the fixed-point scale of one document's part (ℓ2 norm ≤ s)."""
SIZE_SHARE = 0.3
"""sin φ: the part of a document's budget in the words release that carries its cluster's size cell."""
THRESHOLD = 3.0
"""Noise deviations below which a noisy cluster sum is taken for an empty cluster."""
CANDIDATE_DEVIATIONS = 4.0
"""Noise deviations a word's decoded keyword total must stand above zero to be a candidate (about one word in
30,000 passes on noise alone)."""
WORDS_WEIGHT = 2.0
"""The words release's share of the budget, in Lloyd releases: its noise multiplier is σ/√2."""

SHARED = {o.name: o for o in DP_SGD_OPTIONS}  # the options that mean here what they mean for DP-SGD
DP_OPTIONS: tuple[Option, ...] = (
    Option("dp.distributed", bool, False, "distributed DP under mask: every release a Skellam-noised sum of "
           "per-document parts of norm ≤ 1 (embeddings unit length, word counts clipped); only the sum is seen"),
    Option("dp.epsilon", float, 1.0, "distributed: the ε one document of a party spends over the whole run "
           "(σ is calibrated to it)", minimum=0.0, exclusive_minimum=True),
    SHARED["dp.delta"],
    Option("dp.words", int, 16, "distributed: m, the keywords a document adds to the vocabulary's and its cluster's "
           "word counts (its m words nearest its embedding, KeyBERT's, 1/√m each)", minimum=1),
    Option("dp.candidates", int, 1000, "distributed: N, the words of largest noisy keyword totals whose class counts "
           "are released (the topics' words are chosen among them)", minimum=10),
    SHARED["dp.min_contributors"],
    Option("dp.max_documents", int, 1_000_000, "distributed: the most documents one party holds (the public bound "
           "every release is offset by)", minimum=1),
)


@dataclass(frozen=True)
class EmbeddingDP:
    """The resolved mechanism: target ε and δ, the keywords m a document adds, the N candidate words, the planned
    contributors' floor, the public bound on a party's documents."""

    epsilon: float
    delta: float
    words: int
    candidates: int
    min_contributors: int | None
    max_documents: int

    @classmethod
    def from_options(cls, options: Mapping[str, OptionValue]) -> EmbeddingDP | None:
        """The settings, or None when ``dp.distributed`` is off."""
        if not options.get("dp.distributed"):
            return None
        mc = options.get("dp.min_contributors")
        return cls(float(options["dp.epsilon"]), float(options["dp.delta"]),  # type: ignore[arg-type]
                   int(options["dp.words"]), int(options["dp.candidates"]),  # type: ignore[arg-type]
                   None if mc is None else int(mc),  # type: ignore[arg-type]
                   int(options["dp.max_documents"]))  # type: ignore[arg-type]

    def planned(self, n_parties: int) -> int:
        """The contributors the shares are sized for (ConfigError outside 2..P)."""
        return planned_contributors(self.min_contributors, n_parties)

    def check_party(self, who: str, n_docs: int) -> None:
        """TrainingError when a party holds more documents than the public bound."""
        if n_docs > self.max_documents:
            raise TrainingError(f"{who} holds {n_docs} documents, more than dp.max_documents={self.max_documents}")

    def max_value(self, sigma: float, planned: int) -> int:
        """The largest cell of any release: 2·s·max_documents + 2B."""
        return 2 * SCALE * self.max_documents + 2 * share_bound(share_lambda(sigma, SCALE, planned))


def sensitivities(cells: int) -> tuple[float, float]:
    """(Δ1, Δ2) of one document's part of a release of ``cells`` cells after truncation toward zero."""
    return SCALE * math.sqrt(cells) + cells, SCALE + math.sqrt(cells)


def spent(planned: int, releases: Sequence[tuple[int, int, float]], delta: float,
          orders: Sequence[int] = DEFAULT_ORDERS) -> float:
    """ε at ``delta`` of ``releases`` ((cells, contributors, σ) each) whose shares are sized for ``planned``."""
    if not releases:
        return 0.0
    rdp = np.zeros(len(orders))
    for cells, sigma in sorted({(c, s) for c, _, s in releases}):
        l1, l2 = sensitivities(cells)
        lam = share_lambda(sigma, SCALE, planned)
        rdp = rdp + composed_rdp([(1.0, 2.0 * n * lam) for c, n, s in releases if (c, s) == (cells, sigma)],
                                 l1, l2, orders)
    return float(epsilon_from_rdp(rdp, np.asarray(orders), delta, "balle")[0])


def plan(sigma: float, lloyd_cells: int, vocabulary_cells: int, words_cells: int, rounds: int,
         contributors: int) -> list[tuple[int, int, float]]:
    """The releases of a run of ``rounds`` Lloyd rounds: R + 1 Lloyd releases and the vocabulary release at σ, the
    words release at σ/√WORDS_WEIGHT."""
    return ([(lloyd_cells, contributors, sigma)] * (rounds + 1) + [(vocabulary_cells, contributors, sigma)]
            + [(words_cells, contributors, words_sigma(sigma))])


def words_sigma(sigma: float) -> float:
    """The words release's noise multiplier: the topics' words are what the run is for, so they get more budget."""
    return sigma / math.sqrt(WORDS_WEIGHT)


def calibrate(epsilon: float, delta: float, planned: int, lloyd_cells: int, vocabulary_cells: int, words_cells: int,
              rounds: int) -> float:
    """The smallest σ (to 0.1 %) whose planned run (``plan`` with ``planned`` contributors) spends ≤ ``epsilon``."""
    def cost(sigma: float) -> float:
        return spent(planned, plan(sigma, lloyd_cells, vocabulary_cells, words_cells, rounds, planned), delta)

    low, high = 1e-3, 1.0
    while cost(high) > epsilon:
        low, high = high, high * 2.0
        if high > 1e6:
            raise ConfigError(f"dp.epsilon={epsilon:g} needs a noise beyond any use; raise it")
    while high / low > 1.001:
        mid = math.sqrt(low * high)
        low, high = (low, mid) if cost(mid) <= epsilon else (mid, high)
    return high


def random_starts(d: int, k: int, seed: int) -> np.ndarray:
    """float64[k, d] seeded random unit directions (the starts of a DP run; the same for every party)."""
    g = np.random.default_rng([seed, 0x4B53]).standard_normal((k, d))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def encode(parts_sum: np.ndarray, sigma: float, planned: int, dp: EmbeddingDP,
           rng: np.random.Generator) -> np.ndarray:
    """int64[cells, 1]: this party's release of the sum of its documents' parts (float64[cells], each part of ℓ2
    norm ≤ 1) in fixed point, with a Skellam share per cell and the public offset; every cell in [0, max_value]."""
    body = np.trunc(parts_sum.reshape(-1) * SCALE).astype(np.int64)
    shares, bound = bounded_shares(share_lambda(sigma, SCALE, planned), body.shape, rng, "this party")
    return (body + shares + SCALE * dp.max_documents + bound).reshape(-1, 1)


def decode(total: np.ndarray, contributors: int, sigma: float, planned: int, dp: EmbeddingDP) -> np.ndarray:
    """float64[cells]: the noisy sum of the parts (per-cell noise deviation ≈ σ·√(contributors/planned))."""
    offset = SCALE * dp.max_documents + share_bound(share_lambda(sigma, SCALE, planned))
    return (np.asarray(total, dtype=np.float64).reshape(-1) - contributors * offset) / SCALE


def noise_deviation(sigma: float, planned: int, contributors: int) -> float:
    """σ̂: the noise deviation of one cell of a decoded sum, in units of one document's part."""
    return math.sqrt(2.0 * contributors * share_lambda(sigma, SCALE, planned)) / SCALE


def lloyd_parts(x: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """float64[k·d]: Σ_j of x_j (unit rows [D, d]) placed in the block of its cluster ``labels`` [D]."""
    sums = np.zeros((k, x.shape[1]))
    np.add.at(sums, labels, x)
    return sums.reshape(-1)


def noisy_centroids(noisy: np.ndarray, before: np.ndarray, deviation: float) -> tuple[np.ndarray, np.ndarray]:
    """(centroids [k, d] = S̃_c over the debiased ‖S_c‖, kept [k] bool) from the decoded Lloyd sums; a cluster whose
    debiased squared length is within THRESHOLD deviations of pure noise's (σ̂²√(2d)) keeps ``before``'s row."""
    k, d = before.shape
    sums = noisy.reshape(k, d)
    debiased = np.sum(sums * sums, axis=1) - d * deviation**2
    kept = debiased > THRESHOLD * deviation**2 * math.sqrt(2.0 * d)  # ‖N‖² − dσ̂² has deviation σ̂²√(2d)
    out = before.copy()
    out[kept] = sums[kept] / np.sqrt(debiased[kept])[:, None]
    return out, kept


def keywords(counts: Any, m: int, x: np.ndarray | None = None, word_vectors: np.ndarray | None = None) -> Any:
    """The CSR [D, V] (weight 1 each) of each document's ``m`` keywords among its distinct words (``counts``, CSR
    [D, V], duplicates summed): KeyBERT's, those whose unit word embeddings ``word_vectors`` [V, d] have the highest
    cosine to its unit embedding (``x`` [D, d]); without embeddings, its most frequent. Ties: the lower word id."""
    import scipy.sparse as sp

    cols = []
    for j in range(counts.shape[0]):
        a, b = counts.indptr[j], counts.indptr[j + 1]
        words = counts.indices[a:b]
        score = counts.data[a:b] if word_vectors is None or x is None else word_vectors[words] @ x[j]
        cols.append(words[np.lexsort((words, -score))[:m]])
    lengths = np.array([len(c) for c in cols], dtype=np.int64)
    indices = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    return sp.csr_matrix((np.ones(len(indices)), indices, np.concatenate([[0], np.cumsum(lengths)])),
                         shape=counts.shape)


def vocabulary_parts(chosen: Any, keep: np.ndarray, m: int) -> np.ndarray:
    """float64[V]: Σ_j of document j's keywords (``chosen``, CSR [D, V]), 1/√m each; documents where ``keep`` [D]
    is False take no part. One document's part has ℓ2 norm ≤ 1."""
    rows = np.repeat(np.arange(chosen.shape[0]), np.diff(chosen.indptr))
    use = keep[rows]
    return np.bincount(chosen.indices[use], minlength=chosen.shape[1]) / math.sqrt(m)


def candidates(noisy_totals: np.ndarray, n: int, deviation: float) -> np.ndarray:
    """int64[≤ n]: the ids, ascending, of the ``n`` largest decoded keyword totals (ties: the lower id) that stand
    CANDIDATE_DEVIATIONS noise deviations above zero (at least the 10 largest, so that a topic can name ten
    words). Beyond that line a total is mostly noise: at ε = 1 on 11k documents the line keeps about 100 words,
    and the 1,000 largest would drown every topic's words in noise (NPMI −0.19 against 0.06)."""
    order = np.argsort(-noisy_totals, kind="stable")[:n]
    above = noisy_totals[order] > CANDIDATE_DEVIATIONS * deviation
    return np.sort(order[:max(int(above.sum()), min(10, len(order)))]).astype(np.int64)


def word_parts(chosen: Any, labels: np.ndarray, keep: np.ndarray, words: np.ndarray, width: int, k: int,
               m: int) -> np.ndarray:
    """float64[k·width + k]: Σ_j of document j's keywords (``chosen``, CSR [D, V]) among the candidate ``words``
    [N ≤ width] (ascending ids), each cos φ / √m, in the block of its cluster ``labels[j]`` (its first N cells; the
    rest stay 0), and sin φ in its cluster's size cell; documents where ``keep`` [D] is False take no part. One
    document's part has ℓ2 norm ≤ 1."""
    n = len(words)
    rows = np.repeat(np.arange(chosen.shape[0]), np.diff(chosen.indptr))
    at = np.searchsorted(words, chosen.indices)
    hit = keep[rows] & (at < n) & (words[np.minimum(at, max(n - 1, 0))] == chosen.indices) if n else \
        np.zeros(len(rows), dtype=bool)
    weight = math.sqrt(1.0 - SIZE_SHARE**2) / math.sqrt(m)
    out = np.zeros(k * width + k)
    np.add.at(out, labels[rows[hit]] * width + at[hit], weight)
    np.add.at(out, k * width + labels[keep], SIZE_SHARE)
    return out


def noisy_class_counts(noisy: np.ndarray, k: int, words: np.ndarray, width: int, n_words: int,
                       m: int) -> tuple[np.ndarray, np.ndarray]:
    """(class keyword counts [k, V] ≥ 0, documents per cluster [k] ≥ 0) in document units from the decoded words
    release (``word_parts``' layout) over the candidate ``words`` [N]; a word outside them counts 0 in every
    class."""
    unit = math.sqrt(1.0 - SIZE_SHARE**2) / math.sqrt(m)
    out = np.zeros((k, n_words))
    out[:, words] = np.clip(noisy[:k * width].reshape(k, width)[:, :len(words)], 0.0, None) / unit
    sizes = np.clip(noisy[k * width:], 0.0, None) / SIZE_SHARE
    return out, sizes


def privacy_summary(dp: EmbeddingDP, planned: int, releases: Sequence[tuple[int, int, float]]) -> dict[str, Any]:
    """summary.json's ``privacy`` for a party with these ``releases`` ((cells, contributors, σ) each)."""
    return {"epsilon": spent(planned, releases, dp.delta), "delta": dp.delta, "target_epsilon": dp.epsilon,
            "unit": "one document of this party", "mechanism": "Skellam shares under mask, no subsampling",
            "releases": len(releases), "noise_multipliers": sorted({s for _, _, s in releases}),
            "words_per_document": dp.words, "candidate_words": dp.candidates, "planned_contributors": planned,
            "contributors": [n for _, n, _ in releases]}
