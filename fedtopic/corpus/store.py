"""Saving a :class:`Corpus` to one ``.npz`` file and loading it back (no pickle)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.errors import CorpusError


def save_corpus(corpus: Corpus, path: str | Path) -> None:
    """Write ``corpus`` to ``path`` (an ``.npz``), atomically (temp file + rename)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    arrays = {
        "words": corpus.words,
        "doc_ptr": corpus.doc_ptr,
        "vocab": np.array(corpus.vocab, dtype=str),
        "label_names": np.array(corpus.label_names, dtype=str),
        "doc_names": np.array(corpus.doc_names, dtype=str),
    }
    if corpus.labels is not None:
        arrays["labels"] = corpus.labels
    if corpus.sent_ptr is not None:
        arrays["sent_ptr"] = corpus.sent_ptr
    if corpus.texts:  # one UTF-8 blob and offsets: a fixed-width str array would pad every text to the longest
        encoded = [t.encode("utf-8") for t in corpus.texts]
        arrays["texts_utf8"] = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        arrays["texts_ptr"] = np.concatenate([[0], np.cumsum([len(b) for b in encoded])]).astype(np.int64)
    with open(tmp, "wb") as fh:
        np.savez(fh, **arrays)
    os.replace(tmp, path)


def load_corpus(path: str | Path) -> Corpus:
    """Read a corpus written by :func:`save_corpus`."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            return Corpus(
                words=data["words"],
                doc_ptr=data["doc_ptr"],
                vocab=tuple(data["vocab"].tolist()),
                labels=data["labels"] if "labels" in data.files else None,
                label_names=tuple(data["label_names"].tolist()),
                doc_names=tuple(data["doc_names"].tolist()),
                sent_ptr=data["sent_ptr"] if "sent_ptr" in data.files else None,
                texts=_texts(data) if "texts_ptr" in data.files else (),
            )
    except FileNotFoundError:
        raise CorpusError(f"no such corpus file: {path}") from None
    except (OSError, ValueError, KeyError) as exc:
        raise CorpusError(f"{path} is not a saved fedtopic corpus ({exc})") from None


def _texts(data) -> tuple[str, ...]:
    blob, ptr = data["texts_utf8"].tobytes(), data["texts_ptr"]
    return tuple(blob[a:b].decode("utf-8") for a, b in zip(ptr[:-1].tolist(), ptr[1:].tolist()))
