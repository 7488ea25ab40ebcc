"""Synthetic federated corpora from the LDA generative process, with ground truth.

gFedNTM paper §4.1.1: L nodes share a vocabulary of artificial terms ("term56");
of the K topics, K' are shared by all nodes and (K − K')/L are private to each node.
Topics φ_k ~ Dir(η·1_V); a document of node ℓ draws θ_d ~ Dir(α) over the shared
topics and node ℓ's private ones (zero weight on every other topic), then each token
z ~ Cat(θ_d), w ~ Cat(φ_z). The paper uses α = 50/K, η = 0.01 and document lengths
uniform in [150, 250] (mean ± 25 %); we keep the ± 25 % around ``doc_length``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.errors import CorpusError


@dataclass(frozen=True)
class SyntheticData:
    """Party corpora and the model that generated them.

    parties:         one Corpus per party (labels = party index, label_names "party0", …)
    phi:             float64[K, V] true topic-word distributions
    thetas:          float64[D_p, K] true document-topic distributions, one per party
    topics_of_party: int64 topic indices each party uses (shared ones first)
    n_shared:        K', the shared topics are 0 … K'−1
    """

    parties: list[Corpus]
    phi: np.ndarray
    thetas: list[np.ndarray]
    topics_of_party: list[np.ndarray]
    n_shared: int
    alpha: float
    eta: float

    def merged(self) -> Corpus:
        """All parties' documents in one corpus, party by party (doc names "partyP/docI")."""
        ptrs = [self.parties[0].doc_ptr]
        offset = self.parties[0].n_tokens
        for c in self.parties[1:]:
            ptrs.append(c.doc_ptr[1:] + offset)
            offset += c.n_tokens
        return Corpus(
            words=np.concatenate([c.words for c in self.parties]),
            doc_ptr=np.concatenate(ptrs),
            vocab=self.parties[0].vocab,
            labels=np.concatenate([c.labels for c in self.parties]),
            label_names=self.parties[0].label_names,
            doc_names=sum((c.doc_names for c in self.parties), ()),
        )

    def merged_theta(self) -> np.ndarray:
        """float64[D, K] true θ in the order of :meth:`merged`."""
        return np.concatenate(self.thetas)

    def theta_for(self, doc_names: Sequence[str]) -> np.ndarray:
        """float64[len(doc_names), K] true θ of documents named as in :meth:`merged`."""
        names = (name for corpus in self.parties for name in corpus.doc_names)
        index = {name: i for i, name in enumerate(names)}
        try:
            rows = [index[n] for n in doc_names]
        except KeyError as exc:
            raise CorpusError(f"document {exc.args[0]!r} is not in this synthetic corpus") from None
        return self.merged_theta()[rows]


def generate_synthetic(
    n_parties: int = 5,
    n_topics: int = 10,
    n_shared: int = 5,
    n_words: int = 5000,
    docs_per_party: int = 1000,
    doc_length: int = 100,
    alpha: float | None = None,
    eta: float = 0.01,
    seed: int = 0,
) -> SyntheticData:
    """Sample a federated LDA corpus (gFedNTM §4.1.1); ``alpha=None`` means 50 / n_topics."""
    n_private, rest = divmod(n_topics - n_shared, n_parties) if n_parties > 0 else (0, 1)
    if n_parties < 1 or not 0 <= n_shared <= n_topics or rest:
        raise CorpusError(
            f"need n_parties ≥ 1 and 0 ≤ n_shared ≤ n_topics with (n_topics − n_shared) "
            f"divisible by n_parties; got n_parties={n_parties}, n_topics={n_topics}, "
            f"n_shared={n_shared}"
        )
    if n_topics < 1 or n_words < 1 or docs_per_party < 1 or doc_length < 1:
        raise CorpusError("n_topics, n_words, docs_per_party and doc_length must be positive")
    alpha = 50.0 / n_topics if alpha is None else alpha
    if alpha <= 0 or eta <= 0:
        raise CorpusError(f"alpha and eta must be positive, got alpha={alpha}, eta={eta}")
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(n_words, eta), size=n_topics)
    vocab = tuple(f"term{i}" for i in range(n_words))
    label_names = tuple(f"party{p}" for p in range(n_parties))
    shared = np.arange(n_shared)
    lo, hi = max(1, round(0.75 * doc_length)), max(1, round(1.25 * doc_length))
    parties, thetas, topic_sets = [], [], []
    for p in range(n_parties):
        private = n_shared + p * n_private + np.arange(n_private)
        topics = np.concatenate([shared, private]).astype(np.int64)
        theta = np.zeros((docs_per_party, n_topics))
        theta[:, topics] = rng.dirichlet(np.full(len(topics), alpha), size=docs_per_party)
        lengths = rng.integers(lo, hi + 1, size=docs_per_party)
        words = _sample_tokens(rng, theta, phi, lengths)
        doc_ptr = np.zeros(docs_per_party + 1, dtype=np.int64)
        np.cumsum(lengths, out=doc_ptr[1:])
        parties.append(
            Corpus(
                words=words,
                doc_ptr=doc_ptr,
                vocab=vocab,
                labels=np.full(docs_per_party, p, dtype=np.int32),
                label_names=label_names,
                doc_names=tuple(f"party{p}/doc{i}" for i in range(docs_per_party)),
            )
        )
        thetas.append(theta)
        topic_sets.append(topics)
    return SyntheticData(parties, phi, thetas, topic_sets, n_shared, float(alpha), float(eta))


def _sample_tokens(
    rng: np.random.Generator, theta: np.ndarray, phi: np.ndarray, lengths: np.ndarray
) -> np.ndarray:
    """int32[sum(lengths)]: z ~ Cat(θ_d), then w ~ Cat(φ_z), token by token.

    Both draws are done by inverse-CDF lookups on row-offset cumulative sums, so one
    ``searchsorted`` serves all documents (row r's CDF is shifted into [r, r+1]).
    """
    doc_of_token = np.repeat(np.arange(len(lengths)), lengths)
    z = _categorical_rows(rng, theta, doc_of_token)
    return _categorical_rows(rng, phi, z).astype(np.int32)


def _categorical_rows(rng: np.random.Generator, probs: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One draw from Cat(probs[r]) for each r in ``rows``."""
    cdf = np.cumsum(probs, axis=1)
    cdf /= cdf[:, -1:]
    n_cols = probs.shape[1]
    flat = (cdf + np.arange(len(probs))[:, None]).ravel()
    u = rng.random(len(rows)) + rows
    idx = np.searchsorted(flat, u, side="right")
    cols = idx - rows * n_cols
    return np.minimum(cols, n_cols - 1)
