"""The parties' corpora pooled into one (the centralised baselines, evaluation on every party's documents)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedtopic.corpus.types import Corpus


def merge_corpora(parts: Sequence[Corpus]) -> Corpus:
    """Pool the parties' corpora (same vocabulary) into one, in party order (their documents' names too, when every
    part has them); one part is returned as it is, and narrow (uint16) words stay narrow."""
    if len(parts) == 1:
        return parts[0]
    narrow = all(c.words.dtype == np.uint16 for c in parts)
    words = np.concatenate([c.words for c in parts]).astype(np.uint16 if narrow else np.int32, copy=False)
    lengths = np.concatenate([c.doc_lengths() for c in parts])
    ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    labels = None
    if all(c.labels is not None for c in parts):
        labels = np.concatenate([c.labels for c in parts]).astype(np.int32, copy=False)
    sent_ptr = None
    if all(c.sent_ptr is not None for c in parts):  # sentence boundaries survive pooling when every part has them
        offsets = np.cumsum([0, *(c.n_tokens for c in parts)])
        sent_ptr = np.concatenate([*(c.sent_ptr[:-1] + o for c, o in zip(parts, offsets)), [offsets[-1]]])
        sent_ptr = sent_ptr.astype(np.int64)
    texts = sum((c.texts for c in parts), ()) if all(c.texts or not c.n_docs for c in parts) else ()
    names = sum((c.doc_names for c in parts), ()) if all(c.doc_names or not c.n_docs for c in parts) else ()
    return Corpus(words=words, doc_ptr=ptr, vocab=parts[0].vocab, labels=labels, label_names=parts[0].label_names,
                  sent_ptr=sent_ptr, texts=texts, doc_names=names)
