"""Keep freed megabyte buffers in the process instead of handing them back to the kernel at every free (glibc).

A synchronous round moves buffers of a few MB through every process it touches: an HTTP body, its joined copy,
the decoded array, the aggregate and its encoding (gFedNTM's gradient round: 5 × 3 MB up, 5 × 4.5 MB down). glibc
serves such a buffer from a fresh ``mmap`` or returns the top of its heap to the kernel once 128 kB-ish of it is
free, so every round faults the same megabytes in again, page by page, and the kernel zeroes them. With the
thresholds below, freed buffers below 32 MB stay in the heap for the next round (up to 256 MB of free heap is
kept; the heap grows 64 MB at a time). Measured with ``benchmarks/bench_exchange.py --sizes 770250`` (docs/results/gfedntm.md,
"Neural steps (target 5)"): the aggregator's CPU per gradient round fell by about a fifth, the parties' by a
quarter.

The price is memory a process keeps after a peak: at most ``TRIM_THRESHOLD`` of free heap per arena. Only glibc
has these knobs; elsewhere (musl, macOS) ``keep_freed_buffers`` does nothing. A user who sets glibc's own
``MALLOC_*_`` environment variables keeps them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD = 32 * 2**20  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit): buffers below it come from the heap
TRIM_THRESHOLD = 256 * 2**20  # free heap kept before any is returned
TOP_PAD = 64 * 2**20  # extra heap asked for at each growth

_ENV = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_THRESHOLD_")
_applied = False


def is_glibc() -> bool:
    """Whether this process runs on glibc (whose malloc has the knobs)."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError):  # the name is unknown off glibc
        return False


def keep_freed_buffers() -> bool:
    """Set glibc's thresholds (once per process); whether they were set (False: not glibc, or the user's own
    ``MALLOC_*_`` variables are in the environment)."""
    global _applied
    if _applied:
        return True
    if not is_glibc() or any(name in os.environ for name in _ENV):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return False
    ok = all(libc.mallopt(param, value) == 1 for param, value in (
        (M_MMAP_THRESHOLD, MMAP_THRESHOLD), (M_TRIM_THRESHOLD, TRIM_THRESHOLD), (M_TOP_PAD, TOP_PAD)))
    _applied = ok
    return ok
