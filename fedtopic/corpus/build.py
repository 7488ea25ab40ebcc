"""From texts (or token lists) to a :class:`Corpus`."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedtopic.corpus.tokenize import Tokenizer
from fedtopic.corpus.types import Corpus
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.errors import CorpusError


def corpus_from_texts(
    texts: Sequence[str],
    labels: Sequence[str | None] | None = None,
    *,
    tokenizer: Tokenizer | None = None,
    vocabulary: Vocabulary | None = None,
    min_df: int = 2,
    max_df: float = 0.5,
    max_size: int | None = None,
    names: Sequence[str] | None = None,
    drop_empty: bool = True,
    label_names: Sequence[str] | None = None,
) -> Corpus:
    """Tokenise ``texts`` and encode them, keeping sentence boundaries (``Tokenizer.sentence_tokens``).

    ``vocabulary=None`` builds one from these texts with min_df / max_df / max_size
    (see :meth:`Vocabulary.build`); otherwise the given vocabulary is used as is
    (e.g. a training vocabulary for a test set). A label of ``None`` means unlabelled.
    """
    tokenizer = tokenizer or Tokenizer()
    split = [tokenizer.sentence_tokens(t) for t in texts]
    token_docs = [tokens for tokens, _ in split]
    if vocabulary is None:
        vocabulary = Vocabulary.build(token_docs, min_df=min_df, max_df=max_df, max_size=max_size)
    return corpus_from_tokens(
        token_docs, vocabulary, labels, names=names, drop_empty=drop_empty, label_names=label_names,
        sentence_starts=[starts for _, starts in split], texts=texts,
    )


def corpus_from_tokens(
    token_docs: Sequence[Sequence[str]],
    vocabulary: Vocabulary,
    labels: Sequence[str | None] | None = None,
    *,
    names: Sequence[str] | None = None,
    drop_empty: bool = True,
    label_names: Sequence[str] | None = None,
    sentence_starts: Sequence[Sequence[int]] | None = None,
    texts: Sequence[str] | None = None,
) -> Corpus:
    """Encode already tokenised documents with ``vocabulary``.

    Labels are indexed by ``label_names`` when given (so that a train and a test
    corpus agree), else by the sorted distinct labels. ``names`` default to the
    documents' positions in the input, so dropped empty documents stay traceable.
    ``sentence_starts[d]``: where document d's sentences start in ``token_docs[d]``; the corpus then keeps
    ``sent_ptr`` (a sentence left without in-vocabulary words disappears). ``texts``: the documents' raw text,
    kept for the documents kept.
    """
    n = len(token_docs)
    if labels is not None and len(labels) != n:
        raise CorpusError(f"got {len(labels)} labels for {n} documents")
    if names is not None and len(names) != n:
        raise CorpusError(f"got {len(names)} names for {n} documents")
    if texts is not None and len(texts) != n:
        raise CorpusError(f"got {len(texts)} texts for {n} documents")
    if sentence_starts is not None and len(sentence_starts) != n:
        raise CorpusError(f"got sentence starts for {len(sentence_starts)} of {n} documents")
    if sentence_starts is None:
        encoded = [vocabulary.encode(doc) for doc in token_docs]
        sentence_lengths = None
    else:
        pieces = [[vocabulary.encode(doc[a:b]) for a, b in zip(starts, [*starts[1:], len(doc)])]
                  for doc, starts in zip(token_docs, sentence_starts)]
        encoded = [np.concatenate(p).astype(np.int32) if p else np.zeros(0, np.int32) for p in pieces]
        sentence_lengths = [[len(x) for x in p if len(x)] for p in pieces]
    keep = [i for i, ids in enumerate(encoded) if len(ids) or not drop_empty]
    if not keep or not any(len(encoded[i]) for i in keep):
        hint = "; the vocabulary is empty: lower min_df or raise max_df" if not len(vocabulary) else ""
        raise CorpusError(
            f"corpus is empty after tokenising: {n} texts, none with a word of the "
            f"{len(vocabulary)}-word vocabulary{hint}"
        )
    lengths = np.fromiter((len(encoded[i]) for i in keep), dtype=np.int64, count=len(keep))
    doc_ptr = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(lengths, out=doc_ptr[1:])
    words = np.concatenate([encoded[i] for i in keep]).astype(np.int32, copy=False)
    label_ids = None
    if labels is not None:
        if label_names is None:  # from all inputs, so dropping documents keeps the indexing
            label_names = sorted({str(lab) for lab in labels if lab is not None})
        label_ids, label_names = encode_labels([labels[i] for i in keep], label_names)
    names_out = tuple(str(names[i]) if names is not None else str(i) for i in keep)
    sent_ptr = None
    if sentence_lengths is not None:
        flat = [n for i in keep for n in sentence_lengths[i]]
        sent_ptr = np.zeros(len(flat) + 1, dtype=np.int64)
        np.cumsum(np.asarray(flat, dtype=np.int64), out=sent_ptr[1:])
    return Corpus(
        words=words,
        doc_ptr=doc_ptr,
        vocab=vocabulary.words,
        labels=label_ids,
        label_names=tuple(label_names or ()),
        doc_names=names_out,
        sent_ptr=sent_ptr,
        texts=tuple(str(texts[i]) for i in keep) if texts is not None else (),
    )


def encode_labels(
    labels: Sequence[str | None], label_names: Sequence[str] | None = None
) -> tuple[np.ndarray, tuple[str, ...]]:
    """int32[D] label ids (-1 for None) and the label names they index."""
    if label_names is None:
        label_names = sorted({str(lab) for lab in labels if lab is not None})
    index = {name: i for i, name in enumerate(label_names)}
    ids = np.empty(len(labels), dtype=np.int32)
    for d, lab in enumerate(labels):
        if lab is None:
            ids[d] = -1
        elif str(lab) in index:
            ids[d] = index[str(lab)]
        else:
            raise CorpusError(f"label {lab!r} of document {d} is not one of {list(label_names)}")
    return ids, tuple(label_names)
