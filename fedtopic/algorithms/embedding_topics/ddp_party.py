"""One party of ``fed-embedding-topics`` under distributed DP (``--opt dp.distributed=true``): R + 1 Lloyd
releases from seeded random starts, the vocabulary release that picks the candidate words and the words release
of their class counts, each a Skellam-noised sum of per-document parts of norm ≤ 1, only the masked sum seen (the
mechanism and its accounting: ``dp``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from fedtopic.algorithms.embedding_topics.clustering import (
    assign,
    centroid_shift,
    described,
    outliers,
    unit_rows,
)
from fedtopic.algorithms.embedding_topics.dp import (
    EmbeddingDP,
    calibrate,
    candidates,
    decode,
    encode,
    keywords,
    lloyd_parts,
    noise_deviation,
    noisy_centroids,
    noisy_class_counts,
    privacy_summary,
    random_starts,
    spent,
    vocabulary_parts,
    word_parts,
    words_sigma,
)
from fedtopic.algorithms.embedding_topics.embeddings import embed_words
from fedtopic.algorithms.embedding_topics.party import (
    CENTROID_SHIFT,
    EmbeddingParty,
    Settings,
    final_topics,
)
from fedtopic.algorithms.federated import Channel, Exchange, StepRecord
from fedtopic.corpus.types import Corpus
from fedtopic.models.nnls import counts_matrix


class EmbeddingTopicsDDPParty(EmbeddingParty):
    """Party ``index``; its noise is keyed by ``secret`` (the consortium's, so no outsider can replay it)."""

    def __init__(self, party_id: str, index: int, corpus: Corpus, settings: Settings, dp: EmbeddingDP,
                 secret: bytes | None) -> None:
        super().__init__(party_id, corpus, settings)
        self.index, self.dp = index, dp
        self._secret = () if secret is None else (int.from_bytes(secret, "big"),)
        self.n_parties = 0
        self.releases: list[tuple[int, int, float]] = []  # (cells, contributors, σ) of every release
        self._sigmas: dict[int, float] = {}
        self.candidates: np.ndarray | None = None  # int64[N] the consortium's candidate words, after round R + 1
        self._keywords: Any = None

    def _cells(self) -> tuple[int, int, int]:
        """(Lloyd, vocabulary, words) cells of a release."""
        k, v = self.settings.clusters, self.corpus.n_words
        return k * self.x.shape[1], v, k * self._width() + k

    def _width(self) -> int:
        """The candidates' most: a words block's cells."""
        return min(self.dp.candidates, self.corpus.n_words)

    def done(self) -> bool:
        return self.round > self.settings.rounds + 2

    @property
    def chosen(self) -> Any:
        """CSR [D, V] this party's documents' keywords (``dp.keywords``: KeyBERT's under minilm, the most frequent
        under hashed), chosen once."""
        if self._keywords is None:
            counts = counts_matrix(self.corpus)
            counts.sum_duplicates()
            if self.settings.embedding == "minilm":  # KeyBERT's keywords need a semantic space; hashed is not one
                vectors = embed_words(self.corpus.vocab, self.settings.embedding, self.settings.seed)
                self._keywords = keywords(counts, self.dp.words, self.x, vectors)
            else:
                self._keywords = keywords(counts, self.dp.words)
        return self._keywords

    def _planned(self) -> int:
        return self.dp.planned(self.n_parties)

    @property
    def sigma(self) -> float:
        """σ: calibrated so that the planned run (R + 1 Lloyd releases, one words release) spends dp.epsilon."""
        planned = self._planned()
        if planned not in self._sigmas:
            self._sigmas[planned] = calibrate(self.dp.epsilon, self.dp.delta, planned, *self._cells(),
                                              self.settings.rounds)
        return self._sigmas[planned]

    def channels(self, n_parties: int) -> list[Channel]:
        self.n_parties = n_parties
        lloyd, vocabulary, words = self._cells()
        planned, bound = self._planned(), self.dp.max_value(self.sigma, self._planned())
        return [Channel("lloyd", "counts", lloyd, {"shape": [lloyd, 1], "max_value": bound, "setup": True,
                                                   "min_contributors": planned}),
                Channel("vocab", "counts", vocabulary, {"shape": [vocabulary, 1], "max_value": bound,
                                                             "every_cell": True, "min_contributors": planned}),
                Channel("words", "counts", words, {"shape": [words, 1], "max_value": bound, "every_cell": True,
                                                   "min_contributors": planned})]

    def setup(self, exchange: Exchange) -> None:
        """Nothing to agree on; a party beyond the public bound on documents is refused here."""
        self.dp.check_party(f"party {self.party_id}", self.corpus.n_docs)

    def _release(self, exchange: Exchange, channel: str, round: int, parts: np.ndarray) -> tuple[np.ndarray, float]:
        """(the decoded noisy sum, its per-cell noise deviation) of this party's ``parts`` and the others'."""
        sigma, planned = (words_sigma(self.sigma) if channel == "words" else self.sigma), self._planned()
        rng = np.random.default_rng([self.settings.seed, 0x4554, self.index, round, *self._secret])
        agg = exchange.sum(channel, round if channel == "lloyd" else 0, encode(parts, sigma, planned, self.dp, rng))
        contributors = len(agg.contributors)
        self.releases.append((parts.size, contributors, sigma))
        return (decode(np.asarray(agg.value), contributors, sigma, planned, self.dp),
                noise_deviation(sigma, planned, contributors))

    def step(self, round: int, exchange: Exchange) -> StepRecord:
        s, live = self.settings, np.linalg.norm(self.x, axis=1) > 0
        k = s.clusters
        if self.centroids is None:
            self.centroids = random_starts(self.x.shape[1], k, s.seed)
        labels = assign(self.x, self.centroids)
        if round <= s.rounds:
            noisy, deviation = self._release(exchange, "lloyd", round, lloyd_parts(self.x[live], labels[live], k))
            before = self.centroids
            self.centroids, kept = noisy_centroids(noisy, before, deviation)
            self.round = round + 1
            moved = centroid_shift(unit_rows(before), unit_rows(self.centroids))  # DP's centroids are not unit
            return StepRecord(quality=moved, quality_name=CENTROID_SHIFT, epsilon=self.epsilon(),
                              extra={"phase": "lloyd", "clusters_kept": int(kept.sum()),
                                                             **(self.embedded if round == 0 else {})})
        keep = described(self.x, self.centroids, s.outlier_cosine)
        if round == s.rounds + 1:
            noisy, deviation = self._release(exchange, "vocab", round,
                                             vocabulary_parts(self.chosen, keep, self.dp.words))
            self.candidates = candidates(noisy, self._width(), deviation)
            self.round = round + 1
            return StepRecord(epsilon=self.epsilon(), extra={"phase": "vocabulary",
                                                             "candidate_words": int(len(self.candidates))})
        assert self.candidates is not None
        self.outliers = outliers(self.x, keep)
        noisy, _ = self._release(exchange, "words", round, word_parts(self.chosen, labels, keep, self.candidates,
                                                                        self._width(), k, self.dp.words))
        class_counts, sizes = noisy_class_counts(noisy, k, self.candidates, self._width(), self.corpus.n_words,
                                                 self.dp.words)
        self.sizes = sizes
        self.topics = final_topics(class_counts, self.centroids, sizes, s.topics)
        self.round = round + 1
        return StepRecord(epsilon=self.epsilon(), extra={"phase": "words", "outliers": self.outliers,
                                                         "topics": int(self.topics.weights.shape[0])})

    def epsilon(self) -> float:
        """ε this party's documents have spent so far."""
        return spent(self._planned(), self.releases, self.dp.delta)

    def state(self) -> dict[str, np.ndarray]:
        out = {"releases": np.array(self.releases, dtype=np.float64).reshape(-1, 3),
               "n_parties": np.array(self.n_parties)}
        if self.candidates is not None:
            out["candidates"] = self.candidates
        return self._state() | out

    def restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        self._restore(arrays)
        self.releases = [(int(c), int(n), float(s)) for c, n, s in arrays["releases"]]
        self.n_parties = int(arrays["n_parties"]) or self.n_parties
        self.candidates = None if "candidates" not in arrays else np.array(arrays["candidates"], dtype=np.int64)

    def privacy(self) -> dict[str, Any]:
        """What this party's releases cost (summary.json's ``privacy``)."""
        return privacy_summary(self.dp, self._planned(), self.releases)
