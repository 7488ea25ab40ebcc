"""A DAFed-LDA party that learns α (and with ``optim_beta`` β) with the consortium (``optim_interval``).

It publishes its document-topic histograms below N_p (``published_priors``) and reads its peers' below theirs;
every ``optim_interval`` sweeps it takes Minka's fixed-point step (models.hyperopt) on its own histograms plus
the latest it may read, as it trains on its own counts plus the latest N_q (Eq. 8). Parties' α may differ as
their views of N_Σ do (asynchrony, and each party reads only what CP allows), and come together as they read
each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from fedtopic.algorithms.asynchronous import ChannelSnapshot, RoundReport
from fedtopic.algorithms.lda.options import LDAHyper
from fedtopic.algorithms.lda.party import LDAParty
from fedtopic.algorithms.lda.published_priors import clip, extra_rows, pack, unpack
from fedtopic.corpus.types import Corpus
from fedtopic.models.hyperopt import DocTopicHistogram, doc_topic_histogram


class LearningLDAParty(LDAParty):
    """``LDAParty`` whose publications carry its histograms of ``width`` columns and whose α is learned."""

    def __init__(self, party_id: str, corpus: Corpus, hyper: LDAHyper, *, width: int, steps: int = 1,
                 seed: int | None = None) -> None:
        super().__init__(party_id, corpus, hyper, steps=steps, seed=seed)
        self.width = width
        self.peer_histograms: dict[str, DocTopicHistogram] = {}
        self.optimisations = 0
        self.clipped_documents = int(np.count_nonzero(corpus.doc_lengths() >= width))

    def own_counts(self) -> np.ndarray:
        """N_p int32[V, K] with this party's histograms below (int32[V + extra_rows, K])."""
        histogram, _ = clip(doc_topic_histogram(self.model.state.n_dk), self.width)
        return np.vstack([self.model.state.n_wk, pack(histogram, self.width)])

    def _counts_only(self, snapshots: Sequence[ChannelSnapshot]) -> list[ChannelSnapshot]:
        """The snapshots' N_q; their histograms kept as the latest of each peer."""
        n_words = self.corpus.n_words
        out = []
        for snap in snapshots:
            if snap.n_wk.shape[0] == n_words + extra_rows(self.hyper.n_topics, self.width):
                self.peer_histograms[snap.party] = unpack(snap.n_wk[n_words:], self.width)
                snap = replace(snap, n_wk=snap.n_wk[:n_words])
            out.append(snap)
        return out

    def train_round(self, others: Sequence[ChannelSnapshot]) -> RoundReport:
        report = super().train_round(self._counts_only(others))
        if self.priors_due(self.optimisations):
            self.optimisations = self.sweeps // self.hyper.optim_interval
            own, _ = clip(doc_topic_histogram(self.model.state.n_dk), self.width)
            summed = sum(self.peer_histograms.values(), own)
            self.learn_priors(summed, self.global_counts())
        return report

    def absorb(self, others: Sequence[ChannelSnapshot]) -> None:
        super().absorb(self._counts_only(others))

    def global_counts(self, others: Sequence[ChannelSnapshot] | None = None) -> np.ndarray:
        return super().global_counts(None if others is None else self._counts_only(others))

    def state(self) -> dict[str, np.ndarray]:
        return super().state() | self.prior_state() | {"optimisations": np.array([self.optimisations])}

    def restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        super().restore(arrays)
        if "alpha" in arrays:
            self.restore_priors(arrays)
            self.optimisations = int(arrays["optimisations"][0])
