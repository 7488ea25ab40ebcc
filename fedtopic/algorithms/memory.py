"""Refuse a model that cannot fit before allocating it: ``-k 100000000`` asked numpy for 1.2 TiB (a traceback),
``-k 1000000000000`` overflowed into a negative length, and ``-k 100000`` on bbc-news was killed by the kernel's
OOM killer (exit 137) after minutes, taking the machine's memory with it.

The estimate is the same for every topic model here, on purpose rough and never low: a document-topic and a
topic-word matrix, as counts and as float64 estimates, with temporaries (32 bytes per cell of
D × K and of V × K for every party that holds a topic-word matrix; measured: 1.25 GB above the
process's base for K 4,000 on bbc-news, estimated 1.48 GB).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from fedtopic.corpus.types import Corpus
from fedtopic.errors import ModelError

BYTES_PER_CELL = 32
GiB = 2**30


def available_bytes() -> int:
    """Memory the kernel says can be allocated without swapping (``MemAvailable``), else physical memory."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def model_bytes(parts: Sequence[Corpus], topics: int) -> int:
    """Rough upper estimate of the bytes K topics need over these corpora (see the module docstring)."""
    docs = sum(c.n_docs for c in parts)
    vocabulary = len(parts[0].vocab) if parts else 0
    return BYTES_PER_CELL * topics * (docs + len(parts) * vocabulary)


def check_model_fits(parts: Sequence[Corpus], topics: int, available: int | None = None) -> None:
    """ModelError in one line if K topics over ``parts`` would need more memory than is available."""
    need, have = model_bytes(parts, topics), available_bytes() if available is None else available
    if need > have:
        docs = sum(c.n_docs for c in parts)
        raise ModelError(f"K = {topics:,} topics need about {need / GiB:,.1f} GiB for their matrices "
                         f"({docs:,} documents, {len(parts)} × {len(parts[0].vocab):,} words); "
                         f"{have / GiB:,.1f} GiB is available: lower -k")
