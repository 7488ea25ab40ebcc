"""The coherence measures gensim's ``CoherenceModel`` reports, computed as it computes them (Röder, Both &
Hinneburg 2015's framework), so that a gensim user's numbers carry over: ``u_mass`` (Mimno et al. 2011) and ``c_v``.

- **u_mass**: segmentation "one-preceding" (every top word w_i with each word w_j ranked above it), probabilities
  from document co-occurrence in the reference corpus, confirmation log((P(w_i, w_j) + ε) / P(w_j)), ε = 1e-12;
  a topic's value is the mean over its pairs.
- **c_v**: segmentation "one-set" (each top word against the topic's whole set), probabilities from sliding
  windows of 110 tokens over the reference texts, counted as gensim counts them (``_cooccurrence.count_windows``: its
  incremental window forgets a word that leaves even when it occurs again inside; kept, since the point of this
  measure is a number comparable with gensim's), each
  word's context vector its NPMI with every top word (γ = 1; NPMI = log((P(a, b) + ε) / (P(a) P(b))) /
  −log(P(a, b) + ε)), a set's vector the sum of its words', confirmation the cosine of the word's and the set's
  vectors; a topic's value is the mean over its words.

The reference texts are the corpus's token sequences in document order (the words its vocabulary kept), which is
what gensim is given in ``tests/test_coherence_measures.py``. Counts are kept only for the pairs a topic asks
about (``coherence.topic_pair_counts``), a word's windows as intervals of steps, never window by window.
"""

from __future__ import annotations

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.errors import EvalError
from fedtopic.eval.coherence import topic_pair_counts

EPSILON = 1e-12
C_V_WINDOW = 110


def _relevant(top_words: np.ndarray, reference: Corpus) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct top-word ids, int[K, N] each top word's index among them); EvalError on a bad id."""
    top = np.asarray(top_words, dtype=np.int64)
    if top.ndim != 2 or top.shape[1] < 2:
        raise EvalError(f"coherence needs int[K, N ≥ 2] top words, got shape {top.shape}")
    if top.min() < 0 or top.max() >= reference.n_words:
        raise EvalError(f"top word ids must be in [0, {reference.n_words}) of the reference vocabulary")
    ids, index = np.unique(top, return_inverse=True)
    return ids, index.reshape(top.shape)


def umass_coherence(top_words: np.ndarray, reference: Corpus) -> np.ndarray:
    """float64[K]: gensim's ``u_mass`` of each topic's top words (int[K, N], most probable first), from the
    documents holding each top word and each pair of a topic's (``coherence.topic_pair_counts``)."""
    ids, index = _relevant(top_words, reference)
    occ, pairs, docs = topic_pair_counts(reference, ids, index)
    out = np.zeros(index.shape[0])
    for k, row in enumerate(index):
        values = []
        for i in range(1, len(row)):
            for j in range(i):
                star = occ[row[j]] / docs
                values.append(np.log((pairs[k, j, i] / docs + EPSILON) / star) if star > 0 else 0.0)
        out[k] = np.mean(values)
    return out


def cv_coherence(top_words: np.ndarray, reference: Corpus, window: int = C_V_WINDOW) -> np.ndarray:
    """float64[K]: gensim's ``c_v`` of each topic's top words (int[K, N]) over ``window``-token windows."""
    if window < 2:
        raise EvalError(f"the c_v window must be at least 2 tokens, got {window}")
    ids, index = _relevant(top_words, reference)
    occ, pairs, windows = topic_pair_counts(reference, ids, index, window)
    p = occ / max(windows, 1)
    out = np.zeros(index.shape[0])
    for k, row in enumerate(index):
        joint = (pairs[k] + pairs[k].T) / max(windows, 1)  # [N, N]: a word with itself is its own probability
        np.fill_diagonal(joint, p[row])
        with np.errstate(divide="ignore", invalid="ignore"):
            npmi = np.log((joint + EPSILON) / np.outer(p[row], p[row])) / -np.log(joint + EPSILON)
        vectors = np.nan_to_num(npmi, nan=0.0, posinf=0.0, neginf=0.0)  # row i: word i's NPMI with every top word
        whole = vectors.sum(axis=0)
        norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(whole)
        out[k] = np.mean(np.where(norms > 0, vectors @ whole / np.where(norms > 0, norms, 1.0), 0.0))
    return out
