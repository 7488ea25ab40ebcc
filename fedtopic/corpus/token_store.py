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

    The tokenizer, min_df, max_df, max_size and encoding were applied when the store was built; asking for other
    ones is a CorpusError that names the store's (a store cannot give back words it dropped)."""
    meta = store_meta(path)
    built = dict(meta.get("reading", {}))
    for key, value in given.items():
        if key == "tokenizer":
            if value.config() != meta.get("tokenizer_config"):
                raise CorpusError(f"{path} was tokenised with other stop words or settings than asked; rebuild it "
                                  "with `fedtopic data build` and the same --stopwords")
        elif key in built and value != built[key]:
            asked = ", ".join(f"{k} {v}" for k, v in given.items() if k in built)
            store = ", ".join(f"{k} {built[k]}" for k in given if k in built)
            raise CorpusError(f"{path} was built with {store}; asked for {asked}: rebuild it with `fedtopic data "
                              f"build` and those options")
    corpus = open_store(path)
    return corpus if vocabulary is None else corpus.in_vocabulary(vocabulary.words)


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
