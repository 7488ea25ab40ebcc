"""Held-out perplexity of a topic model Φ on a test corpus.

Two forms, both exp(-Σ log p(w) / N_scored) with p(w) = Σ_k θ_dk φ_kw:

* ``completion_perplexity`` — document completion (the house definition,
  DESIGN.md "Evaluation, defined once"): θ_d is folded in on the first half of
  each test document and only the second half is scored, so no scored token
  has been seen by the estimate of θ.
* ``eq16_perplexity`` — the CSFed/DAFed paper's Eq. 16: θ_d folded in on the
  whole test document and every token of it scored. It reuses the scored
  tokens to fit θ, so it is optimistic (lower than completion); it is kept
  because the paper's numbers use it. Eq. 16 writes the normaliser Σ L_i with
  L_i described as "the number of documents"; the standard reading, used here,
  is the number of words of document i.

θ comes from ``fedtopic.models.foldin.fold_in`` (Gibbs with Φ fixed, θ averaged
over the sweeps after burn-in). A scored word with p(w) = 0 (Φ with exact
zeros) makes the perplexity +inf, which is the true value.
"""

from __future__ import annotations

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.errors import EvalError
from fedtopic.eval._checks import check_alpha, check_corpus_for_phi, check_phi
from fedtopic.models.foldin import fold_in
from fedtopic.models.prior import Alpha

_CHUNK_ELEMENTS = 1 << 18  # tokens × K scored at once: two gathers of 2 MB of float64 (at 1 << 22, 32 MB each)


def token_log_probs(phi: np.ndarray, theta: np.ndarray, words: np.ndarray, doc_of_token: np.ndarray) -> np.ndarray:
    """float64[N] log Σ_k θ[d,k] φ[k,w] per token (Φ [K,V], θ [D,K]), in bounded-memory chunks."""
    out = np.empty(len(words))
    step = max(1, _CHUNK_ELEMENTS // phi.shape[0])
    phi_t = np.ascontiguousarray(phi.T)
    for lo in range(0, len(words), step):
        hi = min(lo + step, len(words))
        prob = np.einsum("nk,nk->n", theta[doc_of_token[lo:hi]], phi_t[words[lo:hi]])
        with np.errstate(divide="ignore"):
            out[lo:hi] = np.log(prob)
    return out


def _perplexity(log_probs: np.ndarray) -> float:
    return float(np.exp(-log_probs.sum() / len(log_probs)))


def completion_perplexity(
    phi: np.ndarray, corpus: Corpus, alpha: Alpha, *, iterations: int = 50, seed: int = 0
) -> float:
    """Document-completion perplexity of Φ float64[K,V] on ``corpus``.

    Each document with N_d ≥ 2 tokens is split by token position: the first
    ⌊N_d/2⌋ tokens fold in θ_d, the remaining ⌈N_d/2⌉ are scored. Documents
    with fewer than 2 tokens are skipped (nothing to both fit and score).
    Token order is the corpus's order; for a corpus whose tokens are grouped
    by word id (bag-of-words files) the halves see different words, so such
    corpora should be shuffled within documents first.
    Raises EvalError on an empty corpus, no document with ≥ 2 tokens, or a
    vocabulary that does not match Φ.
    """
    phi = check_phi(phi, "completion perplexity")
    check_corpus_for_phi(phi, corpus, "completion perplexity")
    alpha = check_alpha(alpha, "completion perplexity")
    lengths = corpus.doc_lengths()
    keep = np.flatnonzero(lengths >= 2)
    if len(keep) == 0:
        raise EvalError("completion perplexity: no test document has 2 or more tokens")
    docs = corpus.subset(keep)
    lengths = docs.doc_lengths()
    half = lengths // 2
    position = np.arange(docs.n_tokens) - np.repeat(docs.doc_ptr[:-1], lengths)
    in_first = position < np.repeat(half, lengths)
    first_ptr = np.concatenate([[0], np.cumsum(half)]).astype(np.int64)
    theta = fold_in(phi, docs.words[in_first], first_ptr, alpha, iterations=iterations, seed=seed)
    doc_of_token = docs.doc_ids()
    scored = ~in_first
    return _perplexity(token_log_probs(phi, theta, docs.words[scored], doc_of_token[scored]))


def eq16_perplexity(
    phi: np.ndarray, corpus: Corpus, alpha: Alpha, *, iterations: int = 50, seed: int = 0
) -> float:
    """CSFed/DAFed paper Eq. 16 perplexity: fold in and score on the whole test document.

    Optimistic relative to ``completion_perplexity`` (the scored tokens also
    fit θ); reported because the paper's figures use it. Empty documents
    contribute nothing. Raises EvalError on an empty corpus or a vocabulary
    that does not match Φ.
    """
    phi = check_phi(phi, "Eq. 16 perplexity")
    check_corpus_for_phi(phi, corpus, "Eq. 16 perplexity")
    alpha = check_alpha(alpha, "Eq. 16 perplexity")
    theta = fold_in(phi, corpus.words, corpus.doc_ptr, alpha, iterations=iterations, seed=seed)
    return eq16_from_theta(phi, theta, corpus)


def eq16_from_theta(phi: np.ndarray, theta: np.ndarray, corpus: Corpus) -> float:
    """Eq. 16 perplexity of ``corpus`` given θ float64[D,K] already folded in on the whole documents."""
    return _perplexity(token_log_probs(phi, theta, corpus.words, corpus.doc_ids()))
