"""Splitting one corpus across P parties, and a held-out test split.

Schemes follow the CSFed/DAFed paper §8.4 (Table 3): (a) equal division, (b) unbalanced
sizes, (c) by category label, each party one or more whole categories; plus the
Dirichlet label skew of the FedNMF paper (§IV, after Hsu et al. 2019).
"""

from __future__ import annotations

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.errors import CorpusError

SCHEMES = ("a", "b", "c", "dirichlet")


def partition_documents(
    corpus: Corpus,
    n_parties: int,
    scheme: str = "a",
    *,
    seed: int = 0,
    dirichlet_alpha: float = 0.5,
) -> list[np.ndarray]:
    """Disjoint document-index arrays (int64, sorted), one per party, covering the corpus.

    - ``"a"``: random, sizes differ by at most one.
    - ``"b"``: random, party p (0-based) gets a share proportional to p + 1, so sizes
      grow linearly and the largest party holds P times the smallest (rounded by
      largest remainder).
    - ``"c"``: whole label categories per party; categories are shuffled (seeded) and
      then dealt largest-first to the party with the fewest documents, which keeps
      sizes as even as whole categories allow. Needs ≥ P labels, no unlabelled docs.
    - ``"dirichlet"``: each party draws label proportions q_p ~ Dir(α·π), π the
      corpus's label frequencies, and fills an equal share D/P with documents of
      those labels (renormalising q_p over labels not yet used up). α → ∞ gives
      IID parties, α → 0 one label per party (FedNMF paper §IV).
    """
    if n_parties < 1:
        raise CorpusError(f"n_parties must be at least 1, got {n_parties}")
    if n_parties > corpus.n_docs:
        raise CorpusError(
            f"cannot give {n_parties} parties at least one document each: corpus has {corpus.n_docs}"
        )
    rng = np.random.default_rng(seed)
    if scheme == "a":
        sizes = _even_sizes(corpus.n_docs, n_parties)
        parts = _random_blocks(rng, corpus.n_docs, sizes)
    elif scheme == "b":
        parts = _random_blocks(rng, corpus.n_docs, _linear_sizes(corpus.n_docs, n_parties))
    elif scheme == "c":
        parts = _by_label(rng, _labels_or_error(corpus, scheme), n_parties)
    elif scheme == "dirichlet":
        if not dirichlet_alpha > 0:
            raise CorpusError(f"dirichlet_alpha must be positive, got {dirichlet_alpha}")
        parts = _dirichlet(rng, _labels_or_error(corpus, scheme), n_parties, dirichlet_alpha)
    else:
        raise CorpusError(f"unknown partition scheme {scheme!r}: choose one of {', '.join(SCHEMES)}")
    return [np.sort(p).astype(np.int64) for p in parts]


def split_train_test(
    corpus: Corpus, test_fraction: float = 0.25, seed: int = 0
) -> tuple[Corpus, Corpus]:
    """Seeded random held-out split: (train, test), both keeping the corpus's order."""
    train, test = split_indices(corpus.n_docs, test_fraction, seed)
    return corpus.subset(train), corpus.subset(test)


def split_indices(n_docs: int, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted (train, test) index arrays; the test set has round(f·D) documents, at least 1."""
    if not 0.0 < test_fraction < 1.0:
        raise CorpusError(f"test_fraction must be in (0, 1), got {test_fraction}")
    if n_docs < 2:
        raise CorpusError(f"cannot split {n_docs} document(s) into train and test")
    n_test = min(max(1, round(test_fraction * n_docs)), n_docs - 1)
    perm = np.random.default_rng(seed).permutation(n_docs)
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def _even_sizes(n: int, p: int) -> np.ndarray:
    sizes = np.full(p, n // p, dtype=np.int64)
    sizes[: n % p] += 1
    return sizes


def _linear_sizes(n: int, p: int) -> np.ndarray:
    share = np.arange(1, p + 1, dtype=np.float64)
    exact = n * share / share.sum()
    sizes = np.floor(exact).astype(np.int64)
    remainder = n - sizes.sum()
    sizes[np.argsort(-(exact - sizes), kind="stable")[:remainder]] += 1
    if sizes.min() < 1:
        need = p * (p + 1) // 2
        raise CorpusError(
            f"scheme b needs about {need} documents for {p} parties (sizes ∝ 1..{p}); "
            f"corpus has {n}"
        )
    return sizes


def _random_blocks(rng: np.random.Generator, n: int, sizes: np.ndarray) -> list[np.ndarray]:
    perm = rng.permutation(n)
    return np.split(perm, np.cumsum(sizes)[:-1])


def _labels_or_error(corpus: Corpus, scheme: str) -> np.ndarray:
    if corpus.labels is None:
        raise CorpusError(f"partition scheme {scheme!r} needs a labelled corpus; this one has no labels")
    missing = int((corpus.labels < 0).sum())
    if missing:
        raise CorpusError(f"partition scheme {scheme!r}: {missing} documents have no label")
    return corpus.labels


def _by_label(rng: np.random.Generator, labels: np.ndarray, p: int) -> list[np.ndarray]:
    present = np.unique(labels)
    if len(present) < p:
        raise CorpusError(
            f"scheme c gives each party whole categories: {p} parties need at least {p} labels, "
            f"corpus has {len(present)}"
        )
    counts = np.array([(labels == lab).sum() for lab in present])
    order = rng.permutation(len(present))
    order = order[np.argsort(-counts[order], kind="stable")]  # largest first, seeded ties
    load = np.zeros(p, dtype=np.int64)
    members: list[list[int]] = [[] for _ in range(p)]
    for rank, i in enumerate(order):
        # the first P categories go one to each party, so no party is left empty
        party = rank if rank < p else int(np.argmin(load))
        members[party].append(int(present[i]))
        load[party] += counts[i]
    return [np.flatnonzero(np.isin(labels, m)) for m in members]


def _dirichlet(
    rng: np.random.Generator, labels: np.ndarray, p: int, alpha: float
) -> list[np.ndarray]:
    present, counts = np.unique(labels, return_counts=True)
    prior = counts / counts.sum()
    pools = [rng.permutation(np.flatnonzero(labels == lab)) for lab in present]
    left = counts.astype(np.int64).copy()
    parts: list[np.ndarray] = []
    for size in _even_sizes(len(labels), p):
        q = rng.dirichlet(alpha * prior)
        take = np.zeros(len(present), dtype=np.int64)
        need = int(size)
        for _ in range(len(present)):  # each pass uses up at least one label or finishes
            avail = left - take
            w = np.where(avail > 0, q, 0.0)
            if w.sum() <= 0:
                w = (avail > 0).astype(np.float64)
            draw = np.minimum(rng.multinomial(need, w / w.sum()), avail)
            take += draw
            need -= int(draw.sum())
            if need == 0:
                break
        chosen = []
        for j in np.flatnonzero(take):
            start = counts[j] - left[j]
            chosen.append(pools[j][start : start + take[j]])
            left[j] -= take[j]
        parts.append(np.concatenate(chosen))
    return parts
