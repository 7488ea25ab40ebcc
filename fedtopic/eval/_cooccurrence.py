"""Numba kernels for the coherence measures' counts: in how many units (documents for NPMI and u_mass, gensim's
sliding windows for c_v) each asked word occurs, and each pair of a topic's top words together
(``eval.coherence.topic_pair_counts``).

One pass over the reference corpus and nothing per token: a document's asked words are marked in ``stamp``, then
each marked word's places among the topics' top words (``place_ptr``/``places``) look up the later words of the
same topic. The work is Σ_d (asked words of d) · (topics holding each) · n, and the memory K·n² + U counts, where
a [U, U] table of every pair of asked words would need 800 MB at K = 1,000 (U ≤ K·n = 10,000).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def count_documents(words, doc_ptr, column, top_local, place_ptr, places, df, pairs):  # pragma: no cover - compiled
    """Fill df int64[U] (documents holding asked word u) and pairs int64[K, n, n] (pairs[k, a, b], a < b:
    documents holding both top words a and b of topic k).

    words [N] word ids, doc_ptr int64[D+1]; column int64[V]: a word's asked index u, −1 if not asked;
    top_local int64[K, n]: each topic's top words as asked indices; places int64[K·n] (k·n + a for every place
    of asked word u, at places[place_ptr[u]:place_ptr[u+1]]).
    """
    n_asked = df.shape[0]
    n = top_local.shape[1]
    stamp = np.full(n_asked, -1, dtype=np.int64)
    present = np.empty(n_asked, dtype=np.int64)
    for d in range(doc_ptr.shape[0] - 1):
        m = 0
        for t in range(doc_ptr[d], doc_ptr[d + 1]):
            u = column[words[t]]
            if u >= 0 and stamp[u] != d:
                stamp[u] = d
                present[m] = u
                m += 1
        for i in range(m):
            u = present[i]
            df[u] += 1
            for e in range(place_ptr[u], place_ptr[u + 1]):
                k = places[e] // n
                for b in range(places[e] % n + 1, n):
                    if stamp[top_local[k, b]] == d:
                        pairs[k, places[e] % n, b] += 1


@njit(cache=True, nogil=True)
def _overlap(starts, ends, a0, a1, b0, b1):  # pragma: no cover - compiled
    """Steps two sorted lists of disjoint [start, end) intervals share (rows a0..a1 and b0..b1 of starts/ends)."""
    total = 0
    i, j = a0, b0
    while i < a1 and j < b1:
        lo = max(starts[i], starts[j])
        hi = min(ends[i], ends[j])
        if hi > lo:
            total += hi - lo
        if ends[i] < ends[j]:
            i += 1
        else:
            j += 1
    return total


@njit(cache=True, nogil=True)
def count_windows(words, doc_ptr, column, top_local, place_ptr, places, window, occ, pairs):  # pragma: no cover
    """Fill occ int64[U] (windows holding asked word u) and pairs int64[K, n, n] (pairs[k, a, b], a < b: windows
    holding top words a and b of topic k) over every document's sliding windows of ``window`` tokens, as gensim's
    incremental window counts them (``coherence_measures``): the first window holds its distinct words; each slide
    drops the word that left, then adds the one that entered. Returns the number of windows (a document no longer
    than the window, or empty, is one).

    Arguments as ``count_documents``. A word's membership is a list of [start, end) step intervals, so a pair's
    count is the overlap of two lists: nothing per window.
    """
    n_asked = occ.shape[0]
    n = top_local.shape[1]
    longest = 0
    for d in range(doc_ptr.shape[0] - 1):
        longest = max(longest, doc_ptr[d + 1] - doc_ptr[d])
    stamp = np.full(n_asked, -1, dtype=np.int64)
    since = np.full(n_asked, -1, dtype=np.int64)  # step the word's current interval began, −1 outside
    first = np.zeros(n_asked, dtype=np.int64)  # its intervals' rows in starts/ends, after sorting
    count = np.zeros(n_asked, dtype=np.int64)
    present = np.empty(n_asked, dtype=np.int64)
    iv_word = np.empty(longest + 1, dtype=np.int64)
    iv_start = np.empty(longest + 1, dtype=np.int64)
    iv_end = np.empty(longest + 1, dtype=np.int64)
    starts = np.empty(longest + 1, dtype=np.int64)
    ends = np.empty(longest + 1, dtype=np.int64)
    total = 0
    for d in range(doc_ptr.shape[0] - 1):
        base, length = doc_ptr[d], doc_ptr[d + 1] - doc_ptr[d]
        steps = length - window + 1 if length >= window else 1
        total += steps
        m = 0
        n_iv = 0
        for t in range(min(window, length)):
            u = column[words[base + t]]
            if u >= 0 and since[u] < 0:
                since[u] = 0
                if stamp[u] != d:
                    stamp[u] = d
                    present[m] = u
                    m += 1
        for t in range(1, steps):
            o = column[words[base + t - 1]]
            if o >= 0 and since[o] >= 0:
                iv_word[n_iv], iv_start[n_iv], iv_end[n_iv] = o, since[o], t
                n_iv += 1
                since[o] = -1
            u = column[words[base + t + window - 1]]
            if u >= 0 and since[u] < 0:
                since[u] = t
                if stamp[u] != d:
                    stamp[u] = d
                    present[m] = u
                    m += 1
        for i in range(m):
            u = present[i]
            if since[u] >= 0:
                iv_word[n_iv], iv_start[n_iv], iv_end[n_iv] = u, since[u], steps
                n_iv += 1
                since[u] = -1
        for i in range(m):  # intervals grouped by word (each word's close in time order)
            count[present[i]] = 0
        for r in range(n_iv):
            count[iv_word[r]] += 1
        row = 0
        for i in range(m):
            first[present[i]] = row
            row += count[present[i]]
            count[present[i]] = 0
        for r in range(n_iv):
            u = iv_word[r]
            starts[first[u] + count[u]] = iv_start[r]
            ends[first[u] + count[u]] = iv_end[r]
            count[u] += 1
        for i in range(m):
            u = present[i]
            for r in range(first[u], first[u] + count[u]):
                occ[u] += ends[r] - starts[r]
            for e in range(place_ptr[u], place_ptr[u + 1]):
                k, a = places[e] // n, places[e] % n
                for b in range(a + 1, n):
                    v = top_local[k, b]
                    if stamp[v] == d:
                        pairs[k, a, b] += _overlap(starts, ends, first[u], first[u] + count[u],
                                                   first[v], first[v] + count[v])
    return total
