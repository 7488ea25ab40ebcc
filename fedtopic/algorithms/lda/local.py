"""``local-lda``: "stand-alone" LDA of the CSFed/DAFed paper (§8.2.1, Fig. 6), the lower bound federation must beat.

Every party trains alone on its own documents (party p seeded ``seed + p``).
Centralised mode only: one process fits every party's model in turn.
"""

from __future__ import annotations

from collections.abc import Sequence

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


class LocalLDA(LDATrainWriter, Algorithm):
    name = "local-lda"
    summary = "collapsed-Gibbs LDA trained by every party alone on its own documents (no collaboration)"
    paper = "CSFed/DAFed-LDA §8.2.1 (stand-alone)"
    modes = frozenset({Mode.centralised})
    options = LDA_OPTIONS + PRIOR_OPTIONS

    def check_data(self, parts: Sequence[Corpus], spec: TrainSpec) -> None:
        super().check_data(parts, spec)
        check_prior_options(spec)

    def models_per_fit(self, n_parties: int) -> int:
        """One model per party."""
        return n_parties

    def fit(self, parts: Sequence[Corpus], spec: TrainSpec,
            callback: IterationCallback | None = None) -> list[Fitted]:
        """One model per party, in party order."""
        from fedtopic.algorithms.lda.family import train_local

        hyper = hyper_from_spec(spec)
        return [Fitted(TopicModel(m.phi(), m.alpha, m.beta, parts[0].vocab, algorithm=self.name),
                       m.theta()) for m in train_local(parts, hyper, callback)]
