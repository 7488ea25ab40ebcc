"""NPMI topic coherence with the whole document as the co-occurrence window.

For the top-n words of a topic, every unordered pair (w_i, w_j) scores

    NPMI(w_i, w_j) = log[p(w_i, w_j) / (p(w_i) p(w_j))] / −log p(w_i, w_j)

with p(w) = (documents of the reference corpus containing w) / D and
p(w_i, w_j) = (documents containing both) / D; the topic's coherence is the
mean over its n(n−1)/2 pairs (Bouma 2009; Lau et al. 2014, window = document).

Conventions (no ε smoothing, exact limits instead):
* p(w_i, w_j) = 0 (never together, including a word absent from the
  reference) → −1, the limit of NPMI as the joint goes to 0. gensim's
  ε = 1e-12 smoothing gives nearly, but not exactly, −1 here.
* p(w_i, w_j) = 1 (both words in every document) → 1, the limit of perfect
  co-occurrence (0/0 otherwise).
"""

from __future__ import annotations

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.errors import EvalError
from fedtopic.eval._checks import check_phi


def heaviest_ids(weights: np.ndarray, n: int) -> np.ndarray:
    """int64[K, min(n, V)] ids of each row's n heaviest entries, heaviest first: exactly the first n of the
    stable descending sort (ties → lower id, NaN last), unchecked, for any float [K,V] (Φ, W, β's softmax).

    A partial selection, not a sort of every row (78 ms at K = 200, V = 15,184): per row the n-th largest
    weight t from ``partition``, then every entry above t and the lowest ids of those at t, ordered."""
    weights = np.asarray(weights)
    k, v = weights.shape
    n = min(n, v)
    ids = np.empty((k, max(n, 0)), dtype=np.int64)
    if n <= 0:
        return ids
    for row in range(k):  # a row at a time: no [K, V] temporaries (2 × 40 MB at V 100,000, K 50)
        w = weights[row]
        cut = -np.partition(-w, n - 1)[n - 1]  # the row's n-th largest weight
        chosen = np.concatenate([np.flatnonzero(w > cut), np.flatnonzero(w == cut)])[:n]
        if len(chosen) < n:  # NaNs among the n heaviest: the full sort places them last
            ids[row] = np.argsort(-w, kind="stable")[:n]
            continue
        ids[row] = chosen[np.lexsort((chosen, -w[chosen]))]
    return ids


def top_word_ids(phi: np.ndarray, n: int) -> np.ndarray:
    """int64[K,n] ids of each topic's n most probable words, most probable first (ties → lower id)."""
    phi = check_phi(phi, "top words")
    if not 1 <= n <= phi.shape[1]:
        raise EvalError(f"top words: n must be in [1, V={phi.shape[1]}], got {n}")
    return heaviest_ids(phi, n)


def npmi_coherence(top_words: np.ndarray, reference: Corpus, top_n: int = 10) -> np.ndarray:
    """float64[K] mean pairwise NPMI of the first ``top_n`` words in each row of top_words int[K,T].

    Document frequencies of the asked words and of each topic's pairs are counted in one pass over ``reference``
    (``topic_pair_counts``).
    """
    top_words = np.asarray(top_words)
    if top_words.ndim != 2 or top_words.shape[0] < 1 or not np.issubdtype(top_words.dtype, np.integer):
        raise EvalError(f"NPMI: top_words must be an integer [K,T] matrix, got {top_words.dtype} {top_words.shape}")
    if not 2 <= top_n <= top_words.shape[1]:
        raise EvalError(f"NPMI: top_n must be in [2, T={top_words.shape[1]}], got {top_n}")
    if reference.n_docs == 0 or reference.n_tokens == 0:
        raise EvalError("NPMI: the reference corpus has no tokens")
    ids = top_words[:, :top_n]
    if ids.min() < 0 or ids.max() >= reference.n_words:
        raise EvalError(f"NPMI: word id outside the reference vocabulary [0, {reference.n_words})")
    if any(len(np.unique(row)) < top_n for row in ids):
        raise EvalError("NPMI: a topic repeats a word among its top words")
    unique, local = np.unique(ids, return_inverse=True)
    local = local.reshape(ids.shape)
    df, pairs, _ = topic_pair_counts(reference, unique, local)
    upper_i, upper_j = np.triu_indices(top_n, k=1)
    joint = pairs[:, upper_i, upper_j] / reference.n_docs  # [K, n(n-1)/2] pair frequencies
    marginal = df / reference.n_docs
    return _npmi(joint, marginal[local[:, upper_i]] * marginal[local[:, upper_j]]).mean(axis=1)


def _npmi(joint: np.ndarray, outer: np.ndarray) -> np.ndarray:
    """NPMI of pairs from their joint probability and the product of their marginals, with the conventions above."""
    with np.errstate(divide="ignore", invalid="ignore"):
        npmi = np.log(joint / outer) / -np.log(joint)
    npmi[joint == 0] = -1.0
    npmi[joint == 1] = 1.0
    return npmi


def topic_pair_counts(reference: Corpus, unique: np.ndarray, top_local: np.ndarray,
                      window: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """(int64[U] units of ``reference`` holding each asked word ``unique`` int64[U], int64[K, n, n] units holding
    top words a < b of topic k together, the number of units), a unit being a document, or with ``window`` a
    sliding window of that many tokens counted as gensim counts them (``eval._cooccurrence.count_windows``);
    top_local int[K, n]: each topic's top words as indices into ``unique``. One pass over ``reference``, counting
    only the pairs a topic asks about: a [U, U] table would be 800 MB at K = 1,000."""
    from fedtopic.eval._cooccurrence import count_documents, count_windows

    top_local = np.ascontiguousarray(top_local, dtype=np.int64)
    n_topics, n = top_local.shape
    column = np.full(reference.n_words, -1, dtype=np.int64)
    column[unique] = np.arange(len(unique))
    flat = top_local.ravel()
    places = np.argsort(flat, kind="stable").astype(np.int64)  # k·n + a, grouped by asked word
    place_ptr = np.zeros(len(unique) + 1, dtype=np.int64)
    np.cumsum(np.bincount(flat, minlength=len(unique)), out=place_ptr[1:])
    occ = np.zeros(len(unique), dtype=np.int64)
    pairs = np.zeros((n_topics, n, n), dtype=np.int64)
    args = (reference.words, np.asarray(reference.doc_ptr, dtype=np.int64), column, top_local, place_ptr, places)
    if window is None:
        count_documents(*args, occ, pairs)
        return occ, pairs, reference.n_docs
    return occ, pairs, int(count_windows(*args, int(window), occ, pairs))
