"""The coherence measures gensim's ``CoherenceModel`` reports, computed as it computes them (Röder, Both &
Hinneburg 2015's framework), so that a gensim user's numbers carry over: ``u_mass`` (Mimno et al. 2011) and ``c_v``.

- **u_mass**: segmentation "one-preceding" (every top word w_i with each word w_j ranked above it), probabilities
  from document co-occurrence in the reference corpus, confirmation log((P(w_i, w_j) + ε) / P(w_j)), ε = 1e-12;
  a topic's value is the mean over its pairs.
- **c_v**: segmentation "one-set" (each top word against the topic's whole set), probabilities from sliding
  windows of 110 tokens over the reference texts, counted as gensim counts them (``_window_counts``: its
  incremental window forgets a word that leaves even when it occurs again inside; kept, since the point of this
  measure is a number comparable with gensim's), each
  word's context vector its NPMI with every top word (γ = 1; NPMI = log((P(a, b) + ε) / (P(a) P(b))) /
  −log(P(a, b) + ε)), a set's vector the sum of its words', confirmation the cosine of the word's and the set's
  vectors; a topic's value is the mean over its words.

The reference texts are the corpus's token sequences in document order (the words its vocabulary kept), which is
what gensim is given in ``tests/test_coherence_measures.py``. A document's windows are counted at once (running
maxima of its words' entry and exit steps), never window by window.
"""

from __future__ import annotations

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.errors import EvalError

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


def _document_counts(ids: np.ndarray, reference: Corpus) -> tuple[np.ndarray, np.ndarray, int]:
    """(occurrences float64[R], co-occurrences float64[R, R], documents) of ``ids`` by document."""
    lookup = np.full(reference.n_words, -1, dtype=np.int64)
    lookup[ids] = np.arange(len(ids))
    doc = np.repeat(np.arange(reference.n_docs), np.diff(reference.doc_ptr))
    rel = lookup[reference.words]
    keep = rel >= 0
    present = np.zeros((reference.n_docs, len(ids)), dtype=np.float64)
    present[doc[keep], rel[keep]] = 1.0
    return present.sum(axis=0), present.T @ present, reference.n_docs


def _window_counts(ids: np.ndarray, reference: Corpus, window: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(occurrences, co-occurrences, windows) of ``ids`` over sliding windows of ``window`` tokens, counted as
    gensim 4.4's ``WordOccurrenceAccumulator`` counts them: the first window of a text holds its distinct words;
    each slide then drops the word that left (even when it occurs again inside the window) and adds the one that
    entered. A word is therefore in window t when its latest "entered" (the first window counting as step 0) is no
    earlier than its latest "left"; within a step the drop comes first. A text no longer than the window is one
    window; an empty text counts one window with no word."""
    lookup = np.full(reference.n_words, -1, dtype=np.int64)
    lookup[ids] = np.arange(len(ids))
    r = len(ids)
    occ, co, total = np.zeros(r), np.zeros((r, r)), 0
    for d in range(reference.n_docs):
        rel = lookup[reference.words[reference.doc_ptr[d]:reference.doc_ptr[d + 1]]]
        n = len(rel)
        steps = n - window + 1 if n >= window else 1
        total += steps
        here = np.flatnonzero(rel >= 0)
        if here.size == 0:
            continue
        words = np.unique(rel[here])
        slot = np.full(r, -1, dtype=np.int64)
        slot[words] = np.arange(len(words))
        entered = np.full((len(words), steps), -1, dtype=np.int64)
        left = np.full((len(words), steps), -1, dtype=np.int64)
        first = rel[:min(window, n)]
        entered[slot[np.unique(first[first >= 0])], 0] = 0
        if steps > 1:
            t = np.arange(1, steps)
            incoming, outgoing = rel[t + window - 1], rel[t - 1]
            entered[slot[incoming[incoming >= 0]], t[incoming >= 0]] = t[incoming >= 0]
            left[slot[outgoing[outgoing >= 0]], t[outgoing >= 0]] = t[outgoing >= 0]
        last_in = np.maximum.accumulate(entered, axis=1)
        last_out = np.maximum.accumulate(left, axis=1)
        inside = ((last_in >= 0) & (last_in >= last_out)).astype(np.float64)  # [words, windows]
        occ[words] += inside.sum(axis=1)
        co[np.ix_(words, words)] += inside @ inside.T
    return occ, co, total


def umass_coherence(top_words: np.ndarray, reference: Corpus) -> np.ndarray:
    """float64[K]: gensim's ``u_mass`` of each topic's top words (int[K, N], most probable first)."""
    ids, index = _relevant(top_words, reference)
    occ, co, docs = _document_counts(ids, reference)
    out = np.zeros(index.shape[0])
    for k, row in enumerate(index):
        values = []
        for i in range(1, len(row)):
            for j in range(i):
                star = occ[row[j]] / docs
                values.append(np.log((co[row[i], row[j]] / docs + EPSILON) / star) if star > 0 else 0.0)
        out[k] = np.mean(values)
    return out


def cv_coherence(top_words: np.ndarray, reference: Corpus, window: int = C_V_WINDOW) -> np.ndarray:
    """float64[K]: gensim's ``c_v`` of each topic's top words (int[K, N]) over ``window``-token windows."""
    if window < 2:
        raise EvalError(f"the c_v window must be at least 2 tokens, got {window}")
    ids, index = _relevant(top_words, reference)
    occ, co, windows = _window_counts(ids, reference, window)
    p, joint = occ / max(windows, 1), co / max(windows, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        npmi = np.log((joint + EPSILON) / np.outer(p, p)) / -np.log(joint + EPSILON)
    npmi = np.nan_to_num(npmi, nan=0.0, posinf=0.0, neginf=0.0)
    out = np.zeros(index.shape[0])
    for k, row in enumerate(index):
        vectors = npmi[np.ix_(row, row)]  # row i: word i's NPMI with every top word (γ = 1)
        whole = vectors.sum(axis=0)
        norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(whole)
        out[k] = np.mean(np.where(norms > 0, vectors @ whole / np.where(norms > 0, norms, 1.0), 0.0))
    return out
