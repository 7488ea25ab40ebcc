"""The in-memory corpus every part of fedtopic shares."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from fedtopic.errors import CorpusError


@dataclass(frozen=True)
class Corpus:
    """Bag-of-words corpus as a flat token stream (CSR by document).

    words:      int32[N] (or uint16[N], read-only, memory-mapped from a token store: ``corpus.token_store``)
                vocabulary index of every token, documents back to back
    doc_ptr:    int64[D+1] tokens of document d are words[doc_ptr[d]:doc_ptr[d+1]]
    vocab:      tuple[str, ...] of length V
    labels:     int32[D] label index per document, -1 where unlabelled (or None)
    label_names: names for label indices
    doc_names:  optional identifiers (file names, line numbers), length D
    sent_ptr:   int64[S+1] or None: tokens of sentence s are words[sent_ptr[s]:sent_ptr[s+1]]; every
                document boundary is a sentence boundary, no sentence is empty. Corpora built from raw
                text have them (SentenceLDA needs them); synthetic and bag-of-words corpora do not.
    texts:      optional raw text of every document, length D (corpora read from text keep it: CombinedTM
                embeds it; bag-of-words corpora have none). It never leaves its party.
    """

    words: np.ndarray
    doc_ptr: np.ndarray
    vocab: tuple[str, ...]
    labels: np.ndarray | None = None
    label_names: tuple[str, ...] = ()
    doc_names: tuple[str, ...] = field(default=())
    sent_ptr: np.ndarray | None = None
    texts: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.words.dtype not in (np.int32, np.uint16) or self.doc_ptr.dtype != np.int64:
            raise CorpusError("corpus arrays must be words:int32 (or uint16) and doc_ptr:int64")
        if self.doc_ptr.ndim != 1 or len(self.doc_ptr) < 1 or self.doc_ptr[0] != 0:
            raise CorpusError("doc_ptr must start at 0")
        if self.doc_ptr[-1] != len(self.words):
            raise CorpusError("doc_ptr[-1] must equal the number of tokens")
        if len(self.words) and (self.words.min() < 0 or self.words.max() >= len(self.vocab)):
            raise CorpusError("word index out of vocabulary range")
        if self.labels is not None and len(self.labels) != self.n_docs:
            raise CorpusError("labels must have one entry per document")
        if self.texts and len(self.texts) != self.n_docs:
            raise CorpusError("texts must have one entry per document")
        if self.sent_ptr is not None:
            sp = self.sent_ptr
            if sp.dtype != np.int64 or sp.ndim != 1 or len(sp) < 1 or sp[0] != 0 or sp[-1] != len(self.words):
                raise CorpusError("sent_ptr must be int64, start at 0 and end at the number of tokens")
            if np.any(np.diff(sp) <= 0) or not np.isin(self.doc_ptr, sp).all():
                raise CorpusError("sentences must be non-empty and every document boundary a sentence boundary")

    @property
    def n_docs(self) -> int:
        return len(self.doc_ptr) - 1

    @property
    def n_tokens(self) -> int:
        return len(self.words)

    @property
    def n_words(self) -> int:
        """Vocabulary size V."""
        return len(self.vocab)

    @property
    def n_sentences(self) -> int:
        """S, or 0 without sentence boundaries."""
        return 0 if self.sent_ptr is None else len(self.sent_ptr) - 1

    def doc_sentences(self) -> np.ndarray:
        """int64[D+1]: sentences doc_sentences[d]:doc_sentences[d+1] make up document d (needs sent_ptr)."""
        if self.sent_ptr is None:
            raise CorpusError("this corpus has no sentence boundaries (build it from raw text)")
        return np.searchsorted(self.sent_ptr, self.doc_ptr).astype(np.int64)

    def restrict_vocabulary(self, keep: np.ndarray) -> "Corpus":
        """The corpus over the words ``keep`` (int[V'] word ids, in their new order): other tokens are dropped,
        documents stay (possibly empty), sentences left empty disappear, labels and names are kept."""
        remap = np.full(self.n_words, -1, dtype=np.int64)
        remap[np.asarray(keep, dtype=np.int64)] = np.arange(len(keep))
        return self._remapped(remap, tuple(self.vocab[w] for w in keep))

    def in_vocabulary(self, vocab: Sequence[str]) -> "Corpus":
        """The corpus re-encoded over ``vocab`` (another model's words, in its order): tokens of words it lacks are
        dropped, its words this corpus lacks get none; documents stay."""
        index = {w: i for i, w in enumerate(vocab)}
        remap = np.array([index.get(w, -1) for w in self.vocab], dtype=np.int64)
        return self._remapped(remap, tuple(vocab))

    def _remapped(self, remap: np.ndarray, vocab: tuple[str, ...]) -> "Corpus":
        """Every word id w as remap[w] (−1: the token is dropped) over ``vocab``; narrow (uint16) words stay narrow
        where the new vocabulary allows. About 10 bytes a token of temporaries (a 100M-token store: 1 GB)."""
        new = remap.astype(np.int32)[self.words]
        kept = new >= 0
        before = np.zeros(len(kept) + 1, dtype=np.uint32 if len(kept) < 1 << 32 else np.int64)
        np.cumsum(kept, out=before[1:])  # kept tokens before each position
        doc_ptr = before[self.doc_ptr].astype(np.int64)
        sent_ptr = None if self.sent_ptr is None else np.unique(before[self.sent_ptr].astype(np.int64))
        if sent_ptr is not None:
            sent_ptr = np.union1d(sent_ptr, doc_ptr).astype(np.int64)
        narrow = self.words.dtype == np.uint16 and len(vocab) <= 1 << 16
        return Corpus(words=new[kept].astype(np.uint16 if narrow else np.int32), doc_ptr=doc_ptr,
                      vocab=vocab, labels=self.labels, label_names=self.label_names,
                      doc_names=self.doc_names, sent_ptr=sent_ptr, texts=self.texts)

    def word_counts(self) -> np.ndarray:
        """int64[V] every word's count in the corpus (a block of tokens at a time: ``np.bincount`` of all the words
        at once would copy them to 8 bytes a token first)."""
        counts = np.zeros(self.n_words, dtype=np.int64)
        for a in range(0, self.n_tokens, 1 << 22):
            counts += np.bincount(self.words[a:a + (1 << 22)], minlength=self.n_words)
        return counts

    def doc_lengths(self) -> np.ndarray:
        """int64[D] tokens per document."""
        return np.diff(self.doc_ptr)

    def doc_ids(self) -> np.ndarray:
        """int32[N] document index of every token."""
        return np.repeat(np.arange(self.n_docs, dtype=np.int32), self.doc_lengths())

    def sample_documents(self, n: int, seed: int) -> "Corpus":
        """At most ``n`` documents drawn without replacement with ``seed``, in corpus order (the corpus itself
        when it has no more): the held-out slice experiments score on."""
        if self.n_docs <= n:
            return self
        return self.subset(np.sort(np.random.default_rng(seed).choice(self.n_docs, n, replace=False)))

    def subset(self, docs: np.ndarray) -> "Corpus":
        """The corpus restricted to the given document indices (same vocabulary, same word id type)."""
        docs = np.asarray(docs, dtype=np.int64)
        lengths = self.doc_lengths()[docs]
        ptr = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        words = _gather(self.words, self.doc_ptr, docs, ptr)
        sent_ptr = None
        if self.sent_ptr is not None:
            bounds, sp = self.doc_sentences(), self.sent_ptr
            pieces = [sp[bounds[d]:bounds[d + 1] + 1][:-1] - sp[bounds[d]] + ptr[i] for i, d in enumerate(docs)]
            sent_ptr = np.concatenate([*pieces, ptr[-1:]]).astype(np.int64)
        return Corpus(
            words=words,
            doc_ptr=ptr,
            vocab=self.vocab,
            labels=None if self.labels is None else self.labels[docs],
            label_names=self.label_names,
            doc_names=tuple(self.doc_names[d] for d in docs) if self.doc_names else (),
            sent_ptr=sent_ptr,
            texts=tuple(self.texts[d] for d in docs) if self.texts else (),
        )


BLOCK_TOKENS = 1 << 22
"""Tokens a block-at-a-time pass over a corpus takes at once (``document_blocks``): its int64 temporaries stay at
tens of megabytes whatever the corpus size."""


def document_blocks(doc_ptr: np.ndarray, tokens: int = BLOCK_TOKENS) -> Iterator[tuple[int, int]]:
    """(first, last): documents first..last-1 of ``doc_ptr`` (int64[D+1]) hold about ``tokens`` tokens (at least
    one document); the blocks cover every document, in order."""
    first, n_docs = 0, len(doc_ptr) - 1
    while first < n_docs:
        last = min(max(int(np.searchsorted(doc_ptr, doc_ptr[first] + tokens, side="right")) - 1, first + 1), n_docs)
        yield first, last
        first = last


def _gather(words: np.ndarray, doc_ptr: np.ndarray, docs: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """words of documents ``docs`` back to back (``ptr``: their offsets in the result), in ``words``' type, copied
    a document's slice at a time (``corpus._gather``): no per-token positions, whatever the corpus size."""
    from fedtopic.corpus._gather import gather_documents

    out = np.empty(int(ptr[-1]), dtype=words.dtype)
    if len(out):
        gather_documents(words, doc_ptr, docs, ptr, out)
    return out
