"""The ``TopicModel`` of an NMF basis: Φ is Wᵀ with rows normalised, the raw Wᵀ is kept for NNLS inference."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedtopic.algorithms.model import TopicModel


def nmf_topic_model(w: np.ndarray, vocab: Sequence[str], algorithm: str,
                    tokenizer: dict | None = None) -> TopicModel:
    """The model of W float64[V,k] ≥ 0. A topic whose column is all zero gets the uniform row in Φ (it ranks no
    word above another); α and β are 0 (NMF has no Dirichlet priors)."""
    factors = np.ascontiguousarray(np.maximum(w, 0.0).T, dtype=np.float64)
    sums = factors.sum(axis=1, keepdims=True)
    phi = np.where(sums > 0, factors / np.where(sums > 0, sums, 1.0), 1.0 / factors.shape[1])
    return TopicModel(phi, 0.0, 0.0, tuple(vocab), dict(tokenizer or {}), algorithm=algorithm, factors=factors)
