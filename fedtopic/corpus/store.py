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
            )
    except FileNotFoundError:
        raise CorpusError(f"no such corpus file: {path}") from None
    except (OSError, ValueError, KeyError) as exc:
        raise CorpusError(f"{path} is not a saved fedtopic corpus ({exc})") from None
