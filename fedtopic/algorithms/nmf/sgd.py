"""``nmf-sgd``: centralised NMF by projected mini-batch SGD, ± the SMILE MI term (paper "NMF+SGD(+MI)")."""

from __future__ import annotations

from collections.abc import Sequence

from fedtopic.algorithms.base import (
    Algorithm,
    Fitted,
    IterationCallback,
    Mode,
    TrainSpec,
)
from fedtopic.algorithms.fednmf.party import initial_global
from fedtopic.algorithms.nmf.model import nmf_topic_model
from fedtopic.algorithms.nmf.options import SGD_OPTIONS, sgd_settings
from fedtopic.algorithms.nmf.train_writer import NMFTrainWriter
from fedtopic.corpus.pool import merge_corpora
from fedtopic.corpus.types import Corpus
from fedtopic.models.nnls import counts_matrix


class NMFSGD(NMFTrainWriter, Algorithm):
    name = "nmf-sgd"
    summary = "NMF of all documents by projected mini-batch SGD (Eq. 1), with the SMILE MI term when mi_weight > 0 (Eq. 3)"
    paper = "FedNMF+MI (Si et al.), Table III/IV rows 'NMF+SGD' and 'NMF+SGD+MI'"
    modes = frozenset({Mode.centralised})
    options = SGD_OPTIONS
    family = "nmf"

    def fit(self, parts: Sequence[Corpus], spec: TrainSpec,
            callback: IterationCallback | None = None) -> list[Fitted]:
        """``iterations`` epochs over the pooled documents from the same W⁽⁰⁾, θ⁽⁰⁾ as ``fednmf``, so FedAvg with
        one client and C = 1 takes exactly these steps."""
        from fedtopic.neural.nmf_sgd import NMFClient, reconstruction_loss

        corpus = merge_corpora(parts)
        client = NMFClient(counts_matrix(corpus), spec.topics, index=0, seed=spec.seed,
                           precision=str(spec.options["precision"]))
        w, theta = initial_global(corpus.n_words, spec)
        settings = sgd_settings(spec.options)
        for epoch in range(1, spec.iterations + 1):
            w, theta = client.client_update(w, theta, settings, 1)
            if callback is not None:
                callback(0, epoch, None)
        loss = reconstruction_loss(client.counts, w, client.h)
        return [Fitted(nmf_topic_model(w, corpus.vocab, self.name), client.h.copy(),
                       {"reconstruction_error": loss})]
