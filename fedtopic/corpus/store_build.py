"""Tokenising a corpus larger than memory into a token store, in parallel (``fedtopic data build``).

One pass over the text: the source is cut into pieces of about ``CHUNK_BYTES`` (JSON lines at line ends, a folder
of .txt files by groups of files); worker processes tokenise the pieces, each into word ids of its own vocabulary
(uint32, on disk) and that vocabulary's document frequencies. The driver then sums the frequencies, chooses the
vocabulary by the same min_df / max_df / max_size rule as ``read_corpus``, and re-encodes each piece into the
store with one vectorised lookup. Memory stays at a few pieces' worth whatever the corpus size, and the store's
corpus equals ``read_corpus`` of the same source with the same options: the same words, documents, labels and
names (tests/test_token_store.py).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.corpus._word_table import WordTable
from fedtopic.corpus.readers import _decode, check_encoding, jsonl_row
from fedtopic.corpus.reading import CorpusReading
from fedtopic.corpus.token_store import FORMAT, META, word_dtype
from fedtopic.corpus.tokenize import WORD_RE, Tokenizer
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.errors import CorpusError

CHUNK_BYTES = 8 << 20
"""Text a worker tokenises at once (~1.2M tokens of English; a worker holds about 6 copies of it while it works):
small enough that the workers together stay under tomotopy's memory for the same corpus, large enough that the
per-piece costs (a vocabulary of its own, one file) stay under 2 % of the work."""


@dataclass(frozen=True)
class _Piece:
    """What one worker tokenises: bytes [start, end) of a JSON lines file, or a list of .txt files."""

    index: int
    path: Path
    start: int = 0
    end: int = 0
    files: tuple[str, ...] = ()


@dataclass
class _Tokenised:
    """A piece's result: its documents' lengths and labels/names, its own vocabulary and document frequencies
    (the ids themselves are in ``ids_file``), its number of lines (for line numbers), or the first error."""

    index: int
    ids_file: str = ""
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vocab: list[str] = field(default_factory=list)
    df: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    labels: list[str | None] = field(default_factory=list)
    names: list[str | None] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    n_lines: int = 0
    error: tuple[int, str] | None = None  # (line within the piece, message with {line} for the file's line)


@dataclass(frozen=True)
class BuildReport:
    """What ``build_store`` wrote."""

    path: Path
    documents: int
    tokens: int
    vocabulary: int
    words_dtype: str
    bytes_on_disk: int
    dropped_empty: int


def build_store(source: str | Path, out: str | Path, *, reading: CorpusReading | None = None,
                max_size: int | None = None, workers: int | None = None, overwrite: bool = False,
                progress: Callable[[int, int], None] | None = None) -> BuildReport:
    """Tokenise ``source`` (a .jsonl file or a folder of .txt files, as ``read_corpus`` reads them) into a token
    store at ``out`` with ``workers`` processes (default: every core). ``progress(done, total)`` in bytes.

    The store is written to a temporary folder beside ``out`` and renamed when complete, so an interrupted build
    leaves no half store; ``out`` must not exist unless ``overwrite``."""
    source, out = Path(source), Path(out)
    reading = reading or CorpusReading()
    options = reading.options()  # checks min_df, max_df, the encoding and the stop-word file
    if not source.exists():
        raise CorpusError(f"no such file or folder: {source}")
    if out.exists() and not overwrite:
        raise CorpusError(f"{out} exists; give --overwrite to replace it")
    pieces, total = _pieces(source)
    workers = max(1, min(workers or os.cpu_count() or 1, len(pieces)))
    tokenizer: Tokenizer = options["tokenizer"]
    config = (sorted(tokenizer.stopwords), tokenizer.min_length, check_encoding(reading.encoding))
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        merged = _Merged()
        for result in _tokenise_all(pieces, config, work, workers, total, progress):
            merged.add(result)
        report = _write(source, merged, work, reading, max_size)
        if out.exists():
            shutil.rmtree(out)
        os.replace(work, out)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return BuildReport(**{**report.__dict__, "path": out})


def _pieces(source: Path) -> tuple[list[_Piece], int]:
    """The pieces of ``source`` and its size in bytes."""
    if source.is_dir():
        files = sorted(p for p in source.rglob("*.txt") if p.is_file())
        if not files:
            raise CorpusError(f"no .txt files in folder {source}")
        pieces, group, size, total = [], [], 0, 0
        for f in files:
            group.append(f.relative_to(source).as_posix())
            n = f.stat().st_size
            size, total = size + n, total + n
            if size >= CHUNK_BYTES:
                pieces.append(_Piece(len(pieces), source, files=tuple(group)))
                group, size = [], 0
        if group:
            pieces.append(_Piece(len(pieces), source, files=tuple(group)))
        return pieces, total
    if source.suffix != ".jsonl":
        raise CorpusError(f"{source}: a token store is built from a .jsonl file or a folder of .txt files")
    total = source.stat().st_size
    bounds = [0]
    with open(source, "rb") as fh:
        while bounds[-1] < total:
            fh.seek(min(bounds[-1] + CHUNK_BYTES, total))
            fh.readline()  # to the end of the line the cut fell in
            bounds.append(min(fh.tell(), total))
    return [_Piece(i, source, a, b) for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))], total


def _tokenise_all(pieces: list[_Piece], config: tuple, work: Path, workers: int, total: int,
                  progress: Callable[[int, int], None] | None) -> Iterator[_Tokenised]:
    """Every piece's result, in order, ``progress(bytes done, total)`` after each."""
    done = 0
    for piece, result in zip(pieces, _results(pieces, config, work, workers)):
        yield result
        done += piece.end - piece.start if not piece.files else \
            sum((piece.path / f).stat().st_size for f in piece.files)
        if progress:
            progress(done, total)


def _results(pieces: list[_Piece], config: tuple, work: Path, workers: int) -> Iterator[_Tokenised]:
    """Every piece tokenised, in order; in ``workers`` processes (the driver's own when 1)."""
    if workers == 1:
        for piece in pieces:
            yield _tokenise(piece, config, str(work))
        return
    pool = ProcessPoolExecutor(workers)
    in_flight: deque[Future] = deque()
    try:
        for piece in pieces:  # at most two pieces a worker submitted: finished results wait for the driver in memory
            in_flight.append(pool.submit(_tokenise, piece, config, str(work)))
            if len(in_flight) >= 2 * workers:
                yield in_flight.popleft().result()
        while in_flight:
            yield in_flight.popleft().result()
    finally:  # on an error (or an interrupt) the pieces not started are dropped, not tokenised for nothing
        pool.shutdown(wait=True, cancel_futures=True)


def _tokenise(piece: _Piece, config: tuple, work: str) -> _Tokenised:
    """Tokenise one piece (in a worker process): ids in a vocabulary of the piece's own, written to a file.

    ``Tokenizer.tokens`` exactly, arranged for speed: lower-cased ASCII text is split by the word table's kernel
    (``corpus._word_table``), other text by the tokenizer's regex; stop words and short words are then
    decided once per distinct word, not per token (a dropped word keeps its ids but gets document frequency 0,
    which no vocabulary admits). The reading's tokenizer does not stem (``CorpusReading``)."""
    stopwords, min_length, encoding = config
    result = _Tokenised(piece.index)
    parts: list[bytes] = []
    presplit: list[bool] = []
    for lineno, name, text, label in _documents(piece, encoding, result):
        lower = text.lower()
        ascii_text = lower.isascii()
        parts.append(lower.encode("ascii") if ascii_text else " ".join(WORD_RE.findall(lower)).encode("utf-8"))
        presplit.append(not ascii_text)
        result.labels.append(label)
        result.names.append(name)
        result.lines.append(lineno)
    if result.error is not None:
        return result
    table = WordTable()
    ids, lengths = table.tokenise(parts, presplit)
    del parts
    words = table.words()
    stop = frozenset(stopwords)
    result.vocab = words
    result.df = np.where([len(w) >= min_length and w not in stop for w in words], table.df[:len(words)], 0)
    result.lengths = lengths
    result.ids_file = os.path.join(work, f"piece-{piece.index}.ids")
    ids.tofile(result.ids_file)
    return result


def _documents(piece: _Piece, encoding: str, result: _Tokenised) -> Iterator[tuple[int, str | None, str, str | None]]:
    """(line within the piece, id or None, text, label) of every document; stops at the first bad one, recorded
    in ``result.error``."""
    if piece.files:
        labelled_root = piece.path
        for rel in piece.files:
            file = labelled_root / rel
            try:
                text = _decode(file.read_bytes(), file, encoding=encoding)
            except CorpusError as exc:
                result.error = (0, str(exc))
                return
            yield 0, rel, text, None
        return
    with open(piece.path, "rb") as fh:
        fh.seek(piece.start)
        lines = fh.read(piece.end - piece.start).splitlines()
    result.n_lines = len(lines)
    for lineno, raw in enumerate(lines, start=1):
        try:
            row = jsonl_row(raw, piece.path, lineno, encoding)
        except CorpusError as exc:
            result.error = (lineno, str(exc).replace(f" line {lineno}:", " line {line}:", 1))
            return
        if row is not None:
            yield lineno, row[0], row[1], row[2]


class _Merged:
    """The pieces' results folded in order as they come: one provisional vocabulary (first seen, first numbered)
    and its summed document frequencies; each piece's ids file is renumbered into it on arrival, so that no piece's
    own word list outlives its arrival."""

    def __init__(self) -> None:
        self.index: defaultdict[str, int] = defaultdict()
        self.index.default_factory = self.index.__len__
        self.df = np.zeros(0, dtype=np.int64)
        self.pieces: list[tuple[str, np.ndarray]] = []  # ids file (provisional ids), lengths
        self.labels: list[str | None] = []
        self.names: list[str] = []
        self.lines_before = 0

    def add(self, r: _Tokenised) -> None:
        """Fold in the next piece; the first bad document's CorpusError, with its line in the whole file."""
        if r.error is not None:
            local, message = r.error
            raise CorpusError(message.replace("{line}", str(self.lines_before + local)))
        to_provisional = np.fromiter(map(self.index.__getitem__, r.vocab), dtype=np.int64, count=len(r.vocab))
        if len(self.index) > len(self.df):
            self.df = np.concatenate([self.df, np.zeros(len(self.index) - len(self.df), dtype=np.int64)])
        np.add.at(self.df, to_provisional, r.df)
        to_provisional.astype(np.uint32)[np.fromfile(r.ids_file, dtype=np.uint32)].tofile(r.ids_file)
        self.pieces.append((r.ids_file, r.lengths))
        self.labels += r.labels
        self.names += [f"line {self.lines_before + line}" if name is None else name
                       for name, line in zip(r.names, r.lines)]
        self.lines_before += r.n_lines


def _write(source: Path, merged: _Merged, work: Path, reading: CorpusReading,
           max_size: int | None) -> BuildReport:
    """Choose the vocabulary from the summed frequencies and write the store's files into ``work``."""
    n_rows = len(merged.names)
    if n_rows == 0:
        raise CorpusError(f"{source} has no documents")
    vocabulary = Vocabulary.from_document_frequencies(dict(zip(merged.index, merged.df.tolist())), n_rows,
                                                      min_df=reading.min_df, max_df=reading.max_df,
                                                      max_size=max_size)
    dtype = word_dtype(len(vocabulary))
    word_id = vocabulary.word_to_id
    final = np.fromiter((word_id.get(w, -1) for w in merged.index), dtype=np.int64, count=len(merged.index))
    lengths = []
    with open(work / "words.bin", "wb") as fh:
        for ids_file, piece_lengths in merged.pieces:
            ids = final[np.fromfile(ids_file, dtype=np.uint32)]
            os.unlink(ids_file)
            kept = ids >= 0
            ends = np.cumsum(piece_lengths)
            before = np.concatenate([[0], np.cumsum(kept)])
            lengths.append(before[ends] - before[ends - piece_lengths])
            ids[kept].astype(dtype).tofile(fh)
    length = np.concatenate(lengths)
    keep = np.flatnonzero(length > 0)
    n_tokens = int(length.sum())
    if n_tokens == 0:
        hint = "; the vocabulary is empty: lower min_df or raise max_df" if not len(vocabulary) else ""
        raise CorpusError(f"corpus is empty after tokenising: {n_rows} texts, none with a word of the "
                          f"{len(vocabulary)}-word vocabulary{hint}")
    doc_ptr = np.zeros(len(keep) + 1, dtype=np.int64)
    np.cumsum(length[keep], out=doc_ptr[1:])
    doc_ptr.tofile(work / "doc_ptr.bin")
    labels, names = merged.labels, merged.names
    label_names: list[str] = []
    if source.is_dir():  # label = first sub-folder, where there are sub-folders
        parts = [name.split("/") for name in names]
        if any(len(p) > 1 for p in parts):
            labels = [p[0] if len(p) > 1 else None for p in parts]
    if any(lab is not None for lab in labels):
        label_names = sorted({lab for lab in labels if lab is not None})
        index = {name: i for i, name in enumerate(label_names)}
        np.array([-1 if labels[d] is None else index[labels[d]] for d in keep.tolist()], dtype=np.int32) \
            .tofile(work / "labels.bin")
    encoded = [names[d].encode("utf-8") for d in keep.tolist()]
    (work / "names.bin").write_bytes(b"".join(encoded))
    np.concatenate([[0], np.cumsum([len(b) for b in encoded], dtype=np.int64)]).astype(np.int64) \
        .tofile(work / "names_ptr.bin")
    (work / "vocab.json").write_text(json.dumps(list(vocabulary.words), ensure_ascii=False), encoding="utf-8")
    provisional = np.full(len(vocabulary), -1, dtype=np.int64)
    provisional[final[final >= 0]] = np.flatnonzero(final >= 0)
    merged.df[provisional].astype(np.int64).tofile(work / "df.bin")  # a stricter reading re-cuts from these
    meta: dict[str, Any] = {
        "format": FORMAT, "documents": len(keep), "tokens": n_tokens, "vocabulary": len(vocabulary),
        "words_dtype": dtype.name, "labels": bool(label_names), "label_names": label_names,
        "source": str(source), "tokenizer": reading.tokenizer_record(),
        "tokenizer_config": reading.options()["tokenizer"].config(),
        "reading": {"min_df": reading.min_df, "max_df": reading.max_df, "stopwords": reading.stopwords,
                    "encoding": reading.encoding, "max_size": max_size},
        "dropped_empty": n_rows - len(keep), "rows": n_rows,
    }
    (work / META).write_text(json.dumps(meta, indent=2, ensure_ascii=False), encoding="utf-8")
    size = sum(f.stat().st_size for f in work.iterdir())
    return BuildReport(work, len(keep), n_tokens, len(vocabulary), dtype.name, size, n_rows - len(keep))
