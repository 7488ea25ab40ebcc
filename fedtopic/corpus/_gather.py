"""Numba kernel for ``Corpus.subset``: the words of chosen documents copied back to back, one slice a document.

numpy's fancy indexing needs an int64 position for every token it copies (8 bytes a token beside the 2–4 byte
words, and three such temporaries to build them); this copies each document's slice in place, so a held-out split
of a memory-mapped 30M-token store costs its two outputs and nothing else.
"""

from __future__ import annotations

from numba import njit


@njit(cache=True, nogil=True)
def gather_documents(words, doc_ptr, docs, ptr, out):  # pragma: no cover - compiled
    """out[ptr[i]:ptr[i+1]] = words[doc_ptr[d]:doc_ptr[d+1]] for the i-th document d of ``docs``.

    words [N] (any integer type, may be memory-mapped read-only), doc_ptr int64[D+1], docs int64[M], ptr
    int64[M+1] (the result's offsets), out [ptr[M]] of words' type.
    """
    for i in range(docs.shape[0]):
        start = doc_ptr[docs[i]]
        base = ptr[i]
        for t in range(ptr[i + 1] - base):
            out[base + t] = words[start + t]
