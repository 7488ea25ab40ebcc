"""topics.json's rows: every topic's top words with their weights, its prevalence and its NPMI, the table users
of gensim and tomotopy expect (``fedtopic topics`` prints it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.errors import EvalError
from fedtopic.eval.coherence import heaviest_ids, npmi_coherence

TOP_N = 10


def prevalence_from_theta(theta: np.ndarray, corpus: Corpus) -> np.ndarray | None:
    """float64[K]: each topic's share of ``corpus``'s tokens, Σ_d N_d θ_dk / Σ_d N_d, from θ [D,K] whose rows are
    ``corpus``'s documents (None when they are not, or there are no tokens)."""
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim != 2 or theta.shape[0] != corpus.n_docs or corpus.n_tokens == 0:
        return None
    lengths = np.diff(np.asarray(corpus.doc_ptr)).astype(np.float64)
    mass = (lengths / np.maximum(theta.sum(axis=1), 1e-300)) @ theta  # Σ_d N_d θ_d / |θ_d|, no [D,K] copy
    return mass / mass.sum() if mass.sum() > 0 else None


def topic_table(phi: np.ndarray, vocab: Sequence[str], reference: Corpus | None, *,
                prevalence: np.ndarray | None = None, theta: np.ndarray | None = None,
                n: int = TOP_N) -> list[dict[str, Any]]:
    """Per topic: ``topic``, ``words`` (top ``n``), ``weights`` (φ_kw of each, Φ's rows normalised),
    ``prevalence`` (given, else from ``theta`` over ``reference``'s documents, else null) and ``npmi`` (its top
    words' NPMI on ``reference``, documents as windows; null without a reference)."""
    phi = np.asarray(phi, dtype=np.float64)
    if phi.ndim != 2 or not phi.size or not np.all(np.isfinite(phi)) or (phi < 0).any():
        raise EvalError(f"topic table: phi must be a non-empty, finite, non-negative [K, V] matrix, got {phi.shape}")
    mass = phi.sum(axis=1)
    if not np.all(mass > 0):
        raise EvalError("topic table: a row of phi sums to 0")
    n = min(n, phi.shape[1])
    ids = heaviest_ids(phi, n)  # a row's order is its normalised row's: no normalised [K, V] copy
    share = prevalence if prevalence is not None else (
        None if theta is None or reference is None else prevalence_from_theta(theta, reference))
    npmi: np.ndarray | None = None
    if reference is not None and n >= 2:
        try:
            npmi = npmi_coherence(ids, reference, n)
        except EvalError:
            npmi = None
    return [{"topic": k, "words": [vocab[int(i)] for i in ids[k]],
             "weights": [round(float(phi[k, i] / mass[k]), 6) for i in ids[k]],
             "prevalence": None if share is None else round(float(share[k]), 6),
             "npmi": None if npmi is None or not np.isfinite(npmi[k]) else round(float(npmi[k]), 6)}
            for k in range(phi.shape[0])]
