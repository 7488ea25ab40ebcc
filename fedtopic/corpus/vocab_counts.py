"""A party's vocabulary with its word counts, and the consortium's merged vocabulary.

Bringing one's own documents to a consortium needs one shared vocabulary that
every party encodes with. Each party counts its words locally
(``VocabularyCounts.from_corpus``: document and term frequency of every word,
no cut), hands the counts file to whoever merges (a coordinator, or every
party: the merge is deterministic), and ``merge_counts`` sums the counts and
applies the usual document-frequency cut to the pooled figures, so the shared
vocabulary is the one a centralised corpus would have had.

What the merge reveals: every party's word list with its frequencies. A
consortium that must hide those uses the aggregator's alignment, which learns
the word lists but no counts (docs/security.md).

File format: the vocabulary JSON (``"format": "fedtopic.vocabulary"``, read by
``Vocabulary.from_json`` as is) with three more fields: ``documents`` (D) and
``document_frequency`` / ``term_frequency`` (one integer per word).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedtopic.corpus.types import Corpus, document_blocks
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.errors import CorpusError


@dataclass(frozen=True)
class VocabularyCounts:
    """Words (id order) with int64[V] document and term frequencies over ``documents`` documents."""

    words: tuple[str, ...]
    document_frequency: np.ndarray
    term_frequency: np.ndarray
    documents: int

    @classmethod
    def from_corpus(cls, corpus: Corpus) -> VocabularyCounts:
        """The counts of an encoded corpus (read with no vocabulary cut, so every word is counted)."""
        v, ptr = corpus.n_words, corpus.doc_ptr
        df = np.zeros(v, dtype=np.int64)
        for first, last in document_blocks(ptr):  # 16 bytes a token of keys, a block of documents at a time
            doc_of = np.repeat(np.arange(first, last, dtype=np.int64), np.diff(ptr[first:last + 1]))
            df += np.bincount(np.unique(doc_of * v + corpus.words[ptr[first]:ptr[last]]) % v, minlength=v)
        return cls(tuple(corpus.vocab), df, corpus.word_counts(), int(corpus.n_docs))

    def vocabulary(self) -> Vocabulary:
        return Vocabulary(self.words)

    def to_json(self) -> str:
        """The vocabulary file's text with the counts (``save``)."""
        doc = json.loads(self.vocabulary().to_json()) | {
            "documents": self.documents,
            "document_frequency": self.document_frequency.tolist(),
            "term_frequency": self.term_frequency.tolist(),
        }
        return json.dumps(doc, ensure_ascii=False) + "\n"

    def save(self, path: Path) -> Path:
        path.write_text(self.to_json(), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: Path) -> VocabularyCounts:
        """A counts file; a vocabulary file without counts is refused with a hint."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CorpusError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CorpusError(f"{path}: cannot be read ({exc})") from None
        words = Vocabulary.from_json(text).words
        doc = json.loads(text)
        if "document_frequency" not in doc:
            raise CorpusError(f"{path} is a vocabulary without counts; make one with `fedtopic vocab build`")
        try:
            df = np.asarray(doc["document_frequency"], dtype=np.int64)
            tf = np.asarray(doc["term_frequency"], dtype=np.int64)
            n_docs = int(doc["documents"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CorpusError(f"{path}: malformed counts ({exc})") from None
        if df.shape != (len(words),) or tf.shape != (len(words),) or (df < 0).any() or (tf < df).any() or n_docs < 0:
            raise CorpusError(f"{path}: counts do not match its {len(words)} words")
        return cls(words, df, tf, n_docs)


def merge_counts(parts: Sequence[VocabularyCounts], *, min_df: int = 2, max_df: float = 0.5,
                 max_size: int | None = None) -> VocabularyCounts:
    """The consortium's vocabulary: counts summed over ``parts``, cut by pooled document frequency.

    Word order is the vocabulary's own (descending pooled document frequency,
    ties alphabetical), so every party that merges the same files gets the same ids.
    """
    if not parts:
        raise CorpusError("nothing to merge: give at least one vocabulary counts file")
    df: dict[str, int] = {}
    tf: dict[str, int] = {}
    for part in parts:
        for w, d, t in zip(part.words, part.document_frequency.tolist(), part.term_frequency.tolist()):
            df[w] = df.get(w, 0) + d
            tf[w] = tf.get(w, 0) + t
    n_docs = sum(p.documents for p in parts)
    vocab = Vocabulary.from_document_frequencies(df, n_docs, min_df=min_df, max_df=max_df, max_size=max_size)
    if len(vocab) == 0:
        raise CorpusError(f"no word survives the cut (min_df={min_df}, max_df={max_df}) over {n_docs} documents")
    words = vocab.words
    return VocabularyCounts(words, np.array([df[w] for w in words], dtype=np.int64),
                            np.array([tf[w] for w in words], dtype=np.int64), n_docs)


def consensus_words(parts: Sequence[Corpus], size: int) -> np.ndarray:
    """int64 ids (in the parts' shared vocabulary) of the ``size`` words of highest pooled document frequency
    over ``parts``, in the merged vocabulary's order: the vocabulary consensus with frequencies that
    ``vocab align --with-counts --max-size`` computes through the aggregator, here on corpora at hand."""
    if size < 1:
        raise CorpusError(f"a vocabulary needs at least one word, got a cut of {size}")
    merged = merge_counts([VocabularyCounts.from_corpus(p) for p in parts], min_df=1, max_df=1.0, max_size=size)
    ids = {w: i for i, w in enumerate(parts[0].vocab)}
    return np.array([ids[w] for w in merged.words], dtype=np.int64)
