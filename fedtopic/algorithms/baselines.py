"""The two non-federated baselines of the CSFed/DAFed paper (§8.2.1, Fig. 6).

* ``centralized-lda`` ("traditional LDA"): all parties' documents pooled on one
  device, one collapsed Gibbs chain (Eq. 10 with P = 1).
* ``local-lda`` ("stand-alone"): every party trains alone on its own documents.

Both are pure computation over in-memory corpora: no files, no network. A
callback sees every iteration so the caller can show progress and evaluate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.models.lda import GibbsLDA

IterationCallback = Callable[[int, int, GibbsLDA], None]
"""Called as ``callback(party_index, iteration, model)`` after every sweep (iteration counts from 1)."""


@dataclass(frozen=True)
class LDAHyper:
    """Hyper-parameters shared by every LDA-family algorithm (paper §8.1: α = 50/K, β = 0.01)."""

    n_topics: int
    iterations: int
    alpha: float | None = None
    beta: float = 0.01
    sampler: str = "auto"
    threads: int = 1
    seed: int = 0

    @property
    def resolved_alpha(self) -> float:
        return 50.0 / self.n_topics if self.alpha is None else self.alpha


def merge_corpora(parts: Sequence[Corpus]) -> Corpus:
    """Pool the parties' corpora (same vocabulary) into one, in party order."""
    words = np.concatenate([c.words for c in parts]).astype(np.int32, copy=False)
    lengths = np.concatenate([c.doc_lengths() for c in parts])
    ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    labels = None
    if all(c.labels is not None for c in parts):
        labels = np.concatenate([c.labels for c in parts]).astype(np.int32, copy=False)
    return Corpus(words=words, doc_ptr=ptr, vocab=parts[0].vocab, labels=labels, label_names=parts[0].label_names)


def _fit(corpus: Corpus, hyper: LDAHyper, seed: int, party: int, callback: IterationCallback | None) -> GibbsLDA:
    model = GibbsLDA(
        hyper.n_topics,
        alpha=hyper.resolved_alpha,
        beta=hyper.beta,
        sampler=hyper.sampler,
        threads=hyper.threads,
        seed=seed,
    )
    model.fit(
        corpus,
        hyper.iterations,
        callback=None if callback is None else (lambda it, m: callback(party, it, m)),
    )
    return model


def train_centralized(parts: Sequence[Corpus], hyper: LDAHyper, callback: IterationCallback | None = None) -> GibbsLDA:
    """Traditional LDA on the pooled documents of all parties."""
    return _fit(merge_corpora(parts), hyper, hyper.seed, 0, callback)


def train_local(parts: Sequence[Corpus], hyper: LDAHyper, callback: IterationCallback | None = None) -> list[GibbsLDA]:
    """Stand-alone LDA: one independent model per party, seeded ``seed + party``."""
    return [_fit(part, hyper, hyper.seed + p, p, callback) for p, part in enumerate(parts)]
