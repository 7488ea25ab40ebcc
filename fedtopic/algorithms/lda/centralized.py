"""``centralized-lda``: "traditional LDA" of the CSFed/DAFed paper (§8.2.1, Fig. 6), the upper bound federation aims at.

All parties' documents pooled in one process, one collapsed Gibbs chain
(Eq. 10 with P = 1). Centralised mode only: nothing is exchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fedtopic.algorithms.base import (
    Algorithm,
    Fitted,
    IterationCallback,
    Mode,
    TrainSpec,
)
from fedtopic.algorithms.lda.options import (
    LDA_OPTIONS,
    PRIOR_OPTIONS,
    check_prior_options,
    hyper_from_spec,
)
from fedtopic.algorithms.lda.train_writer import LDATrainWriter
from fedtopic.algorithms.model import TopicModel
from fedtopic.corpus.types import Corpus


class CentralizedLDA(LDATrainWriter, Algorithm):
    name = "centralized-lda"
    summary = "collapsed-Gibbs LDA on every party's documents pooled in one place (the non-private upper bound)"
    paper = "CSFed/DAFed-LDA §8.2.1 (traditional LDA)"
    modes = frozenset({Mode.centralised})
    options = LDA_OPTIONS + PRIOR_OPTIONS

    def check_data(self, parts: Sequence[Corpus], spec: TrainSpec) -> None:
        super().check_data(parts, spec)
        check_prior_options(spec)

    def fit(self, parts: Sequence[Corpus], spec: TrainSpec,
            callback: IterationCallback | None = None) -> list[Fitted]:
        """One model on the pooled corpora; the callback sees party index 0."""
        return self.fit_from(parts, spec, None, callback)

    def fit_from(self, parts: Sequence[Corpus], spec: TrainSpec, start_phi: Any,
                 callback: IterationCallback | None = None) -> list[Fitted]:
        """As ``fit``, from ``start_phi`` float64[K, V], a saved model's topics (``train --continue-from``; None:
        a random start)."""
        from fedtopic.algorithms.lda.family import train_centralized

        hyper = hyper_from_spec(spec)
        model = train_centralized(parts, hyper, callback, start_phi=start_phi)
        return [Fitted(TopicModel(model.phi(), model.alpha, model.beta, parts[0].vocab, algorithm=self.name),
                       model.theta())]
