"""``prodlda``: ProdLDA (Srivastava & Sutton 2017) trained centralised, the gFedNTM paper's collaborative model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedtopic.algorithms.base import (
    Algorithm,
    Fitted,
    IterationCallback,
    Mode,
    TrainSpec,
)
from fedtopic.algorithms.model import TopicModel
from fedtopic.algorithms.ntm.options import CENTRAL_OPTIONS, ntm_settings
from fedtopic.algorithms.ntm.train_writer import NTMTrainWriter
from fedtopic.corpus.pool import merge_corpora
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ConfigError
from fedtopic.models.nnls import counts_matrix


class ProdLDA(NTMTrainWriter, Algorithm):
    name = "prodlda"
    summary = "ProdLDA (autoencoded variational inference, product of experts decoder) on all documents"
    paper = "gFedNTM (Calvo-Bartolomé et al.), §3-4: the centralised model; Srivastava & Sutton 2017"
    modes = frozenset({Mode.centralised})
    options = CENTRAL_OPTIONS
    family = "ntm"

    def fit(self, parts: Sequence[Corpus], spec: TrainSpec,
            callback: IterationCallback | None = None) -> list[Fitted]:
        """``iterations`` is the epoch budget; the epoch with the best validation loss is kept."""
        from fedtopic.neural.ntm_model import network_arrays
        from fedtopic.neural.ntm_train import train_centralised
        from fedtopic.neural.prodlda import topics

        corpus = merge_corpora(parts)
        ctx = self.embeddings(corpus)
        if corpus.n_docs < 4:
            raise ConfigError(f"prodlda needs at least 4 documents (a quarter is held out for early stopping), got {corpus.n_docs}")
        counts = counts_matrix(corpus)
        model = train_centralised(counts, ctx, spec.topics, ntm_settings(spec.options, spec.iterations),
                                  seed=spec.seed,
                                  on_epoch=None if callback is None else (lambda e, _v: callback(0, e, None)))
        phi = topics(model.flat, model.shapes)
        best = min(model.history, key=lambda h: h["validation_loss"])
        topic_model = TopicModel(phi, 0.0, 0.0, corpus.vocab, algorithm=self.name, network=network_arrays(model))
        early = len(model.history) < spec.iterations
        return [Fitted(topic_model, model.theta(counts, ctx),
                       {"epochs": len(model.history), "best_epoch": int(best["epoch"]),
                        "validation_loss": float(best["validation_loss"]),
                        "stopped_by": "early-stopping" if early else "max-iterations"})]

    def embeddings(self, corpus: Corpus) -> np.ndarray | None:
        """The encoder's extra input per document (None: ProdLDA's bag of words only)."""
        return None


class CombinedTM(ProdLDA):
    name = "combinedtm"
    summary = "CombinedTM: ProdLDA whose encoder also reads an all-MiniLM-L6-v2 sentence embedding of each document"
    paper = "gFedNTM (Calvo-Bartolomé et al.), §4.2; Bianchi et al. 2021"

    def embeddings(self, corpus: Corpus) -> np.ndarray | None:
        from fedtopic.neural.sentence_embeddings import embed_corpus

        return embed_corpus(corpus).astype(np.float64)
