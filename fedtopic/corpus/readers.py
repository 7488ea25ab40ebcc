"""Reading corpora from disk: a folder of .txt files, JSON lines, UCI bag-of-words.

Every problem (missing file, bad bytes, malformed line, nothing left after
tokenising) is a :class:`CorpusError` naming the file and, where it applies, the line.
"""

from __future__ import annotations

import codecs
import gzip
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.corpus.build import corpus_from_texts
from fedtopic.corpus.token_store import is_token_store, read_store
from fedtopic.corpus.types import Corpus
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.errors import CorpusError

_DOCWORD_RE = re.compile(r"^docword\.(.+)\.txt(\.gz)?$")
_OPTIONS = frozenset({"tokenizer", "vocabulary", "min_df", "max_df", "max_size", "drop_empty", "encoding"})


def read_corpus(path: str | Path, **vocab_options: Any) -> Corpus:
    """Read a corpus, choosing the format from ``path``.

    - a folder of ``.txt`` files (searched recursively): one document per file; the
      label is the first sub-folder under ``path`` (files directly in ``path`` are
      unlabelled; no sub-folders at all → no labels);
    - a ``.jsonl`` file: one JSON object per line with a string ``text``, an optional
      ``label`` and an optional ``id``;
    - UCI bag-of-words: ``docword.NAME.txt[.gz]`` (or a folder holding one) next to
      ``vocab.NAME.txt``;
    - a token store (``fedtopic data build``): its words memory-mapped, options as it was built with.

    ``vocab_options`` are those of :func:`corpus_from_texts` (tokenizer, vocabulary,
    min_df, max_df, max_size, drop_empty), and ``encoding`` (the files' text encoding, UTF-8 by default). For UCI files, whose words are already
    given, min_df / max_df / max_size filter that vocabulary and ``vocabulary``
    re-indexes into another one; ``tokenizer`` does not apply.
    """
    unknown = sorted(set(vocab_options) - _OPTIONS)
    if unknown:
        known = ", ".join(sorted(_OPTIONS))
        raise CorpusError(f"unknown corpus option(s) {', '.join(unknown)}; known: {known}")
    path = Path(path)
    if not path.exists():
        raise CorpusError(f"no such file or folder: {path}")
    check_encoding(vocab_options.get("encoding", "utf-8"))
    if is_token_store(path):
        return read_store(path, **vocab_options)
    try:
        if path.is_dir():
            docwords = sorted(p for p in path.iterdir() if _DOCWORD_RE.match(p.name))
            if len(docwords) > 1:
                names = ", ".join(p.name for p in docwords)
                raise CorpusError(f"{path}: several UCI docword files ({names}); give one of them")
            if docwords:
                return read_uci(docwords[0], **_without_tokenizer(vocab_options))
            return read_text_folder(path, **vocab_options)
        if _DOCWORD_RE.match(path.name):
            return read_uci(path, **_without_tokenizer(vocab_options))
        if path.suffix == ".jsonl":
            return read_jsonl(path, **vocab_options)
    except CorpusError as exc:
        if str(path) in str(exc):
            raise
        raise CorpusError(f"{path}: {exc}") from None
    raise CorpusError(
        f"{path}: unknown corpus format; expected a folder of .txt files, a .jsonl file "
        "or a UCI docword.NAME.txt[.gz] file"
    )


def _folder_texts(folder: Path, encoding: str = "utf-8") -> tuple[list[Path], list[str]]:
    """The ``.txt`` files under ``folder`` (relative, sorted) and their texts."""
    files = sorted(p for p in folder.rglob("*.txt") if p.is_file())
    if not files:
        raise CorpusError(f"no .txt files in folder {folder}")
    return [p.relative_to(folder) for p in files], [_decode(p.read_bytes(), p, encoding=encoding) for p in files]


def read_text_folder(folder: Path, *, encoding: str = "utf-8", **vocab_options: Any) -> Corpus:
    """One document per ``.txt`` file under ``folder``; label = first sub-folder."""
    rel, texts = _folder_texts(folder, encoding)
    labelled = any(len(r.parts) > 1 for r in rel)
    labels = [r.parts[0] if len(r.parts) > 1 else None for r in rel] if labelled else None
    return corpus_from_texts(texts, labels, names=[r.as_posix() for r in rel], **vocab_options)


def _jsonl_rows(path: Path, encoding: str = "utf-8") -> list[tuple[str, str, str | None]]:
    """(id, text, label) of every non-blank line: ``id`` defaults to "line N"."""
    rows: list[tuple[str, str, str | None]] = []
    for lineno, raw in enumerate(path.read_bytes().splitlines(), start=1):
        row = jsonl_row(raw, path, lineno, encoding)
        if row is not None:
            name, text, label = row
            rows.append((f"line {lineno}" if name is None else name, text, label))
    if not rows:
        raise CorpusError(f"{path} has no documents")
    return rows


def jsonl_row(raw: bytes, path: Path, lineno: int, encoding: str = "utf-8") -> tuple[str | None, str, str | None] | None:
    """(id or None, text, label or None) of one JSON line, None for a blank one; CorpusError naming the line."""
    line = _decode(raw, path, lineno, encoding)
    if not line.strip():
        return None
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise CorpusError(f"{path} line {lineno}: not valid JSON ({getattr(exc, 'msg', 'nested too deeply')})") \
            from None
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
        raise CorpusError(f"{path} line {lineno}: expected an object with a string \"text\"")
    label = obj.get("label")
    if label is not None and not isinstance(label, (str, int)):
        raise CorpusError(f"{path} line {lineno}: \"label\" must be a string or an integer")
    return (str(obj["id"]) if "id" in obj else None), obj["text"], (None if label is None else str(label))


def read_jsonl(path: Path, *, encoding: str = "utf-8", **vocab_options: Any) -> Corpus:
    """JSON lines with ``text`` (required), ``label`` and ``id`` (optional); blank lines skipped."""
    rows = _jsonl_rows(path, encoding)
    labels = [label for _, _, label in rows]
    has_labels = any(lab is not None for lab in labels)
    return corpus_from_texts([t for _, t, _ in rows], labels if has_labels else None, names=[n for n, _, _ in rows],
                             **vocab_options)


def read_named_texts(path: Path) -> list[tuple[str, str]]:
    """(document id, text) of every document at ``path``: a folder of .txt files (id: the file's path under it),
    a .jsonl file (id: its ``"id"``, else "line N"), or one UTF-8 text file (id: its path)."""
    if path.is_dir():
        rel, texts = _folder_texts(path)
        return [(r.as_posix(), t) for r, t in zip(rel, texts)]
    if not path.is_file():
        raise CorpusError(f"{path}: no such file or folder")
    if path.suffix == ".jsonl":
        return [(name, text) for name, text, _ in _jsonl_rows(path)]
    return [(str(path), _decode(path.read_bytes(), path))]


def read_uci(
    docword: Path,
    *,
    vocabulary: Vocabulary | None = None,
    min_df: int = 2,
    max_df: float = 0.5,
    max_size: int | None = None,
    drop_empty: bool = True,
    encoding: str = "utf-8",
) -> Corpus:
    """UCI bag-of-words: header D, W, NNZ then ``docID wordID count`` lines (1-based ids)."""
    name = _DOCWORD_RE.match(docword.name)
    vocab_path = docword.with_name(f"vocab.{name.group(1)}.txt") if name else None
    if vocab_path is None or not vocab_path.is_file():
        raise CorpusError(f"{docword}: missing its vocabulary file {vocab_path}")
    raw = gzip.open(docword).read() if docword.suffix == ".gz" else docword.read_bytes()
    lines = raw.split(b"\n", 3)
    if len(lines) < 3:
        raise CorpusError(f"{docword}: header must be three lines D, W, NNZ")
    try:
        n_docs, n_words, nnz = (int(x) for x in lines[:3])
    except ValueError:
        raise CorpusError(f"{docword}: header must be three lines D, W, NNZ") from None
    triples = _parse_triples(lines[3] if len(lines) > 3 else b"", docword)
    if len(triples) != nnz:
        raise CorpusError(f"{docword}: header says NNZ={nnz} but the file has {len(triples)} entries")
    vocab_lines = vocab_path.read_bytes().splitlines()
    vocab_words = [_decode(w, vocab_path, i + 1, encoding).strip() for i, w in enumerate(vocab_lines)]
    if len(vocab_words) != n_words:
        raise CorpusError(f"{vocab_path}: has {len(vocab_words)} words, {docword} says W={n_words}")
    doc, word, count = triples[:, 0] - 1, triples[:, 1] - 1, triples[:, 2]
    for arr, limit, what in ((doc, n_docs, "docID"), (word, n_words, "wordID")):
        bad = np.flatnonzero((arr < 0) | (arr >= limit))
        if len(bad):
            raise CorpusError(f"{docword} line {bad[0] + 4}: {what} out of range 1..{limit}")
    bad = np.flatnonzero(count < 1)
    if len(bad):
        raise CorpusError(f"{docword} line {bad[0] + 4}: count must be positive")
    if vocabulary is None:
        df = np.bincount(word, minlength=n_words)
        vocabulary = Vocabulary.from_document_frequencies(
            dict(zip(vocab_words, df.tolist())), n_docs,
            min_df=min_df, max_df=max_df, max_size=max_size,
        )
    new_id = np.array([vocabulary.word_to_id.get(w, -1) for w in vocab_words], dtype=np.int64)
    word = new_id[word]
    keep = word >= 0
    doc, word, count = doc[keep], word[keep], count[keep]
    order = np.lexsort((word, doc))
    doc, word, count = doc[order], word[order], count[order]
    lengths = np.bincount(doc, weights=count, minlength=n_docs).astype(np.int64)
    docs = np.flatnonzero(lengths) if drop_empty else np.arange(n_docs)
    if lengths.sum() == 0:
        raise CorpusError(f"corpus is empty after tokenising: {docword} has no word of the "
                          f"{len(vocabulary)}-word vocabulary")
    doc_ptr = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum(lengths[docs], out=doc_ptr[1:])
    return Corpus(
        words=np.repeat(word, count).astype(np.int32),
        doc_ptr=doc_ptr,
        vocab=vocabulary.words,
        doc_names=tuple(str(d + 1) for d in docs),
    )


def _without_tokenizer(options: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k != "tokenizer"}


def _parse_triples(body: bytes, path: Path) -> np.ndarray:
    """int64[NNZ, 3]; on any malformed line, report that line."""
    try:
        flat = np.array(body.split(), dtype=np.int64)
        if len(flat) % 3 == 0:
            return flat.reshape(-1, 3)
    except ValueError:
        pass
    for lineno, line in enumerate(body.split(b"\n"), start=4):
        fields = line.split()
        if fields and (len(fields) != 3 or not all(f.isdigit() for f in fields)):
            text = line.decode("utf-8", "replace").strip()[:60]
            raise CorpusError(f"{path} line {lineno}: expected 'docID wordID count', got {text!r}")
    raise CorpusError(f"{path}: malformed docword body")


def check_encoding(encoding: str) -> str:
    """``encoding`` if Python knows it as a text encoding; else a CorpusError."""
    try:
        if not codecs.lookup(encoding)._is_text_encoding:  # type: ignore[attr-defined]
            raise LookupError
    except LookupError:
        raise CorpusError(f"unknown text encoding {encoding!r} (e.g. utf-8, latin-1, cp1252)") from None
    return encoding


def _decode(data: bytes, path: Path, lineno: int | None = None, encoding: str = "utf-8") -> str:
    """The text in ``encoding``, or a CorpusError naming the file and the line of the first bad byte."""
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = lineno if lineno is not None else data.count(b"\n", 0, exc.start) + 1
        name = codecs.lookup(encoding).name
        name, hint = ("UTF-8", "convert the file to UTF-8 or give its --encoding") if name == "utf-8" else \
            (name, "check --encoding")
        raise CorpusError(
            f"{path} line {line}: not valid {name} (byte 0x{data[exc.start]:02x}); {hint}"
        ) from None
