"""What the four LDA-family algorithms share: hyper-parameters, options, pooling and fitting.

The two non-federated baselines of the CSFed/DAFed paper (§8.2.1, Fig. 6) are
fitted here: ``centralized-lda`` ("traditional LDA": all parties' documents
pooled, one collapsed Gibbs chain, Eq. 10 with P = 1) and ``local-lda``
("stand-alone": every party alone). Pure computation over in-memory corpora:
no files, no network. A callback sees every iteration so the caller can show
progress and evaluate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from fedtopic.algorithms.lda.options import LDAHyper
from fedtopic.corpus.pool import merge_corpora
from fedtopic.corpus.types import Corpus
from fedtopic.models.lda import GibbsLDA

IterationCallback = Callable[[int, int, GibbsLDA], None]
"""Called as ``callback(party_index, iteration, model)`` after every sweep (iteration counts from 1)."""


def _fit(corpus: Corpus, hyper: LDAHyper, seed: int, party: int, callback: IterationCallback | None,
         start_phi: np.ndarray | None = None) -> GibbsLDA:
    model = GibbsLDA(
        hyper.n_topics,
        alpha=hyper.resolved_alpha,
        beta=hyper.beta,
        sampler=hyper.sampler,
        threads=hyper.threads,
        seed=seed,
        optim_interval=hyper.optim_interval,
        optim_beta=hyper.optim_beta,
    )
    if start_phi is not None:
        model.initialize(corpus, start_phi)
    model.fit(
        corpus,
        hyper.iterations,
        callback=None if callback is None else (lambda it, m: callback(party, it, m)),
    )
    return model


def train_centralized(parts: Sequence[Corpus], hyper: LDAHyper, callback: IterationCallback | None = None, *,
                      start_phi: np.ndarray | None = None) -> GibbsLDA:
    """Traditional LDA on the pooled documents of all parties; ``start_phi`` float64[K, V]: continue a saved
    model's topics instead of a uniform start."""
    return _fit(merge_corpora(parts), hyper, hyper.seed, 0, callback, start_phi)


def train_local(parts: Sequence[Corpus], hyper: LDAHyper, callback: IterationCallback | None = None) -> list[GibbsLDA]:
    """Stand-alone LDA: one independent model per party, seeded ``seed + party``."""
    return [_fit(part, hyper, hyper.seed + p, p, callback) for p, part in enumerate(parts)]
