"""``nmf``: centralised NMF of the pooled counts by scikit-learn's coordinate descent (the paper's "NMF" row)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from sklearn.decomposition import NMF as SklearnNMF
from sklearn.exceptions import ConvergenceWarning

from fedtopic.algorithms.base import (
    Algorithm,
    Fitted,
    IterationCallback,
    Mode,
    Option,
    TrainSpec,
)
from fedtopic.algorithms.nmf.model import nmf_topic_model
from fedtopic.algorithms.nmf.train_writer import NMFTrainWriter
from fedtopic.corpus.pool import merge_corpora
from fedtopic.corpus.types import Corpus
from fedtopic.models.nnls import counts_matrix


class CentralizedNMF(NMFTrainWriter, Algorithm):
    name = "nmf"
    summary = "NMF of all documents' counts, A ≈ W H (Eq. 1), by coordinate descent (scikit-learn)"
    paper = "FedNMF+MI (Si et al.), Table III/IV baseline 'NMF'"
    modes = frozenset({Mode.centralised})
    options: tuple[Option, ...] = ()
    family = "nmf"

    def fit(self, parts: Sequence[Corpus], spec: TrainSpec,
            callback: IterationCallback | None = None) -> list[Fitted]:
        """``iterations`` is scikit-learn's max_iter (stops earlier at its tolerance); random init from the seed."""
        corpus = merge_corpora(parts)
        a = counts_matrix(corpus)
        model = SklearnNMF(spec.topics, init="random", solver="cd", max_iter=spec.iterations, random_state=spec.seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            h = model.fit_transform(a)
        if callback is not None:
            callback(0, spec.iterations, None)
        return [Fitted(nmf_topic_model(model.components_.T, corpus.vocab, self.name), np.asarray(h, np.float64),
                       {"reconstruction_error": float(model.reconstruction_err_) ** 2,
                        "solver_iterations": int(model.n_iter_)})]
