"""A token store: a corpus on disk as flat binary arrays, opened memory-mapped (``fedtopic data build``).

One folder, written once (``corpus.store_build``) and read by every command that takes ``--corpus``::

    store.json    format, sizes, dtypes, label names, the tokenizer and reading it was built with
    vocab.json    the V words, id order
    words.bin     uint16[N] (V ≤ 65,536) or int32[N]: the word id of every token, documents back to back
    doc_ptr.bin   int64[D+1]: document d's tokens are words[doc_ptr[d]:doc_ptr[d+1]]
    labels.bin    int32[D] label ids, -1 unlabelled (only when the source had labels)
    names.bin     UTF-8 of every document's name, back to back, and names_ptr.bin int64[D+1] its offsets

A token costs 2 bytes on disk (4 past 65,536 words) and nothing in memory until the sampler reads it: the words
are mapped, not loaded. Raw texts and sentence boundaries are not kept: iFTM's SentenceLDA refuses a store, and
CombinedTM embeds each document's words joined by spaces, as for any bag-of-words corpus (give either the source
file for its raw text).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.errors import CorpusError

FORMAT = "fedtopic.TokenStore/1"
META = "store.json"


def is_token_store(path: Path) -> bool:
    """True if ``path`` is a folder holding a token store."""
    return path.is_dir() and (path / META).is_file()


def word_dtype(n_words: int) -> np.dtype:
    """The narrowest word id type for a vocabulary of ``n_words``: uint16 up to 65,536 words, int32 beyond."""
    return np.dtype(np.uint16) if n_words <= 1 << 16 else np.dtype(np.int32)


def store_meta(path: Path) -> dict[str, Any]:
    """store.json of the store at ``path``; CorpusError if it is not one this version reads."""
    try:
        meta = json.loads((path / META).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorpusError(f"{path}: cannot read {META} ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CorpusError(f"{path}: {META} is not a {FORMAT} store")
    return meta


def open_store(path: str | Path) -> Corpus:
    """The corpus in the store at ``path``, its words memory-mapped read-only; one-line CorpusError for a
    missing, truncated or inconsistent store (sizes are checked against store.json before anything is mapped)."""
    path = Path(path)
    meta = store_meta(path)
    try:
        n_docs, n_tokens, dtype = int(meta["documents"]), int(meta["tokens"]), np.dtype(meta["words_dtype"])
        vocab = tuple(json.loads((path / "vocab.json").read_text(encoding="utf-8")))
        label_names = tuple(str(x) for x in meta.get("label_names", ()))
    except (KeyError, TypeError, ValueError, OSError) as exc:
        raise CorpusError(f"{path}: incomplete token store ({exc})") from None
    if dtype not in (np.uint16, np.int32) or len(vocab) != int(meta.get("vocabulary", -1)):
        raise CorpusError(f"{path}: store.json does not match the store's files (rebuild it)")
    words = _mapped(path / "words.bin", dtype, n_tokens)
    doc_ptr = np.fromfile(_sized(path / "doc_ptr.bin", np.int64, n_docs + 1), dtype=np.int64)
    labels = None
    if meta.get("labels"):
        labels = np.fromfile(_sized(path / "labels.bin", np.int32, n_docs), dtype=np.int32)
    names: tuple[str, ...] = ()
    if (path / "names.bin").is_file():
        ptr = np.fromfile(_sized(path / "names_ptr.bin", np.int64, n_docs + 1), dtype=np.int64)
        blob = (path / "names.bin").read_bytes()
        if len(ptr) and ptr[-1] != len(blob):
            raise CorpusError(f"{path}: names.bin is truncated (rebuild the store)")
        names = tuple(blob[a:b].decode("utf-8") for a, b in zip(ptr[:-1].tolist(), ptr[1:].tolist()))
    try:
        return Corpus(words=words, doc_ptr=doc_ptr, vocab=vocab, labels=labels, label_names=label_names,
                      doc_names=names)
    except CorpusError as exc:
        raise CorpusError(f"{path}: damaged token store ({exc})") from None


def read_store(path: Path, *, vocabulary: Any = None, drop_empty: bool = True, **given: Any) -> Corpus:
    """``read_corpus`` of a token store: the store as built, re-encoded over ``vocabulary`` if one is given.

    The tokenizer and encoding were applied when the store was built, and so were min_df, max_df and max_size; a
    stricter min_df / max_df (or a max_size where the store has none) is cut again from the document frequencies
    the store keeps, equal to ``read_corpus`` of the source with those options (a store built with --min-df 1
    --max-df 1.0 serves every reading). Anything else is a CorpusError naming the store's options (a store cannot
    give back words it dropped)."""
    meta = store_meta(path)
    built = dict(meta.get("reading", {}))
    if "tokenizer" in given and given["tokenizer"].config() != meta.get("tokenizer_config"):
        raise CorpusError(f"{path} was tokenised with other stop words or settings than asked; rebuild it with "
                          "`fedtopic data build` and the same --stopwords")
    if "encoding" in given and given["encoding"] != built.get("encoding"):
        raise CorpusError(f"{path} was read as {built.get('encoding')}; rebuild it with --encoding "
                          f"{given['encoding']}")
    cut = {k: given.get(k, built.get(k)) for k in ("min_df", "max_df", "max_size")}
    corpus = open_store(path)
    if cut != {k: built.get(k) for k in cut}:
        stricter = (cut["min_df"] >= built["min_df"] and cut["max_df"] <= built["max_df"]
                    and built.get("max_size") in (None, cut["max_size"]))
        if not stricter or not (path / "df.bin").is_file():
            asked = ", ".join(f"{k} {v}" for k, v in cut.items() if v is not None)
            store = ", ".join(f"{k} {built.get(k)}" for k in cut if built.get(k) is not None)
            raise CorpusError(f"{path} was built with {store}; asked for {asked}: rebuild it with `fedtopic data "
                              f"build` and those options (or --min-df 1 --max-df 1.0, which serves any reading)")
        corpus = _recut(corpus, path, int(meta["rows"]), drop_empty, **cut)
    return corpus if vocabulary is None else corpus.in_vocabulary(vocabulary.words)


def _recut(corpus: Corpus, path: Path, rows: int, drop_empty: bool, *, min_df: int, max_df: float,
           max_size: int | None) -> Corpus:
    """The store's corpus over the words a stricter min_df / max_df / max_size keeps (the vocabulary's rule over
    the store's document frequencies), documents left without a word dropped as ``read_corpus`` drops them."""
    from fedtopic.corpus.vocabulary import Vocabulary

    df = np.fromfile(_sized(path / "df.bin", np.int64, corpus.n_words), dtype=np.int64)
    kept = Vocabulary.from_document_frequencies(dict(zip(corpus.vocab, df.tolist())), rows, min_df=min_df,
                                                max_df=max_df, max_size=max_size)
    if not len(kept):
        raise CorpusError(f"corpus is empty after tokenising: {rows} texts, none with a word of the 0-word "
                          "vocabulary; the vocabulary is empty: lower min_df or raise max_df")
    index = {w: i for i, w in enumerate(corpus.vocab)}
    cut = corpus.restrict_vocabulary(np.array([index[w] for w in kept.words], dtype=np.int64))
    return cut if not drop_empty else cut.subset(np.flatnonzero(cut.doc_lengths() > 0))


def _sized(file: Path, dtype: Any, count: int) -> Path:
    """``file`` if it holds exactly ``count`` items of ``dtype``; else a CorpusError naming it."""
    try:
        size = file.stat().st_size
    except OSError:
        raise CorpusError(f"{file.parent}: {file.name} is missing (rebuild the store)") from None
    if size != count * np.dtype(dtype).itemsize:
        raise CorpusError(f"{file.parent}: {file.name} holds {size} bytes, store.json says "
                          f"{count * np.dtype(dtype).itemsize} (rebuild the store)")
    return file


def _mapped(file: Path, dtype: np.dtype, count: int) -> np.ndarray:
    _sized(file, dtype, count)
    if count == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(file, dtype=dtype, mode="r", shape=(count,))
