"""The LDA family's parties for the one-process harnesses of the papers' experiments (lock-step CSFed, the virtual
clock): ``lda_party`` of csfed-lda or dafed-lda, whatever their modes' own party objects are."""

from __future__ import annotations

from collections.abc import Sequence

from fedtopic.algorithms.base import Algorithm, TrainSpec
from fedtopic.algorithms.lda.party import LDAParty
from fedtopic.corpus.types import Corpus


def build_parties(algorithm: Algorithm, spec: TrainSpec, corpora: Sequence[Corpus],
                  party_ids: Sequence[str]) -> list[LDAParty]:
    """One party of ``algorithm`` per corpus (party i samples with seed ``spec.seed + i``)."""
    return [algorithm.lda_party(pid, i, corpus, spec)  # type: ignore[attr-defined]
            for i, (pid, corpus) in enumerate(zip(party_ids, corpora))]
