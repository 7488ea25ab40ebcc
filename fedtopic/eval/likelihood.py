"""Collapsed joint log-likelihood of an LDA state, per token.

Griffiths & Steyvers (2004), Eqs. 2–3, with symmetric α and β, Φ and θ
integrated out:

    log p(w | z) = K[lnΓ(Vβ) − V lnΓ(β)] + Σ_k [Σ_w lnΓ(n_wk + β) − lnΓ(n_k + Vβ)]
    log p(z)     = D[lnΓ(Kα) − K lnΓ(α)] + Σ_d [Σ_k lnΓ(n_dk + α) − lnΓ(n_d + Kα)]

The value reported is (log p(w|z) + log p(z)) / N, N the number of tokens, so
that runs on corpora of different sizes are comparable; it rises as a
collapsed Gibbs sampler converges.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

from fedtopic.errors import EvalError


def log_likelihood_per_token(n_wk: np.ndarray, n_dk: np.ndarray, alpha: float, beta: float) -> float:
    """(log p(w|z) + log p(z)) / N from word-topic counts int[V,K] and document-topic counts int[D,K]."""
    n_wk = np.asarray(n_wk)
    n_dk = np.asarray(n_dk)
    if n_wk.ndim != 2 or n_dk.ndim != 2 or n_wk.shape[1] != n_dk.shape[1]:
        raise EvalError(f"log-likelihood: need n_wk [V,K] and n_dk [D,K], got {n_wk.shape} and {n_dk.shape}")
    if (n_wk < 0).any() or (n_dk < 0).any():
        raise EvalError("log-likelihood: counts must be non-negative")
    if not (alpha > 0 and beta > 0):
        raise EvalError(f"log-likelihood: alpha and beta must be > 0, got {alpha}, {beta}")
    n_tokens = int(n_wk.sum())
    if n_tokens == 0:
        raise EvalError("log-likelihood: the counts hold no tokens")
    if int(n_dk.sum()) != n_tokens:
        raise EvalError(f"log-likelihood: n_wk holds {n_tokens} tokens but n_dk holds {int(n_dk.sum())}")
    n_words, n_topics = n_wk.shape
    n_docs = n_dk.shape[0]
    log_p_w_given_z = n_topics * (gammaln(n_words * beta) - n_words * gammaln(beta)) + float(
        gammaln(n_wk + beta).sum() - gammaln(n_wk.sum(axis=0) + n_words * beta).sum()
    )
    log_p_z = n_docs * (gammaln(n_topics * alpha) - n_topics * gammaln(alpha)) + float(
        gammaln(n_dk + alpha).sum() - gammaln(n_dk.sum(axis=1) + n_topics * alpha).sum()
    )
    return float((log_p_w_given_z + log_p_z) / n_tokens)


def token_log_likelihood(phi: np.ndarray, theta: np.ndarray, words: np.ndarray, doc_ptr: np.ndarray,
                         chunk: int = 1 << 18) -> float:
    """Mean over tokens of log Σ_k θ_dk φ_kw: the training-data log-likelihood per token of a fitted model, for
    phi float64[K,V] (rows sum to 1), theta float64[D,K] and a corpus's tokens (``Corpus.words``/``doc_ptr``).
    Computed in chunks of tokens (memory O(chunk·K))."""
    words, doc_ptr = np.asarray(words), np.asarray(doc_ptr)
    if words.size == 0:
        raise EvalError("log-likelihood: the corpus holds no tokens")
    docs = np.repeat(np.arange(len(doc_ptr) - 1), np.diff(doc_ptr))
    total = 0.0
    for start in range(0, words.size, chunk):
        w, d = words[start:start + chunk], docs[start:start + chunk]
        p = np.einsum("nk,kn->n", theta[d], phi[:, w])
        total += float(np.log(np.maximum(p, 1e-300)).sum())
    return total / words.size
