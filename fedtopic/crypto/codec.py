"""Sparse, compressed payload codec for word-topic count matrices N_p (V x K).

A party's N_p is very sparse (paper §5.3, "sparse representation": ~6,000
tokens against V*K = 526,200 cells at the paper's scale), so only non-zero
cells are sent. Layout (little-endian):

    header (32 bytes): magic b"FTNK" | version u8 | 3 reserved zero bytes | V u32 | K u32 | nnz u64 | body_len u64
    zlib( varint(first flat index, then gaps between flat indices) ... | varint(count) ... )

Flat index = w * K + k (row-major). Gaps are >= 1 and counts are >= 1, so the
encoding is canonical: one matrix has exactly one payload. Indices and counts
go in two separate streams, which compresses better than interleaving them.

The decoder trusts nothing: it checks magic, version, shape, that the claimed
body length is possible for nnz (before inflating, so a decompression bomb
cannot allocate more than the header allows), canonical varints, strictly
increasing in-range indices, counts in [1, 2^31 - 1], and no trailing bytes.
Encryption is ``envelope``'s job; this module only encodes.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from fedtopic.crypto.errors import CodecError

MAGIC = b"FTNK"
VERSION = 1
HEADER = struct.Struct("<4sB3sIIQQ")
MAX_CELLS = 1 << 28  # largest V*K accepted (1 GiB of int32): guards the dense allocation on decode
MAX_COUNT = (1 << 31) - 1
_MAX_INDEX_VARINT = 5  # flat indices < MAX_CELLS < 2^35 need at most 5 groups of 7 bits
_MAX_COUNT_VARINT = 5  # counts < 2^31 need at most 5 groups
ZLIB_LEVEL = 9


def _varint_encode(values: np.ndarray) -> np.ndarray:
    """LEB128 of non-negative uint64 ``values`` (shape (n,)) -> uint8 array."""
    values = values.astype(np.uint64, copy=False)
    bits = np.zeros(values.shape, dtype=np.int64)
    rest = values.copy()
    for _ in range(64):  # bit length, at most 64 shifts
        live = rest > 0
        if not live.any():
            break
        bits += live
        rest >>= np.uint64(1)
    groups = np.maximum(1, (bits + 6) // 7)
    starts = np.concatenate(([0], np.cumsum(groups)[:-1])).astype(np.int64)
    out = np.empty(int(groups.sum()), dtype=np.uint8)
    for g in range(int(groups.max(initial=1))):
        sel = groups > g
        chunk = (values[sel] >> np.uint64(7 * g)) & np.uint64(0x7F)
        more = np.where(groups[sel] > g + 1, 0x80, 0).astype(np.uint64)
        out[starts[sel] + g] = (chunk | more).astype(np.uint8)
    return out


def _varint_decode(buf: np.ndarray, count: int, max_groups: int, what: str) -> tuple[np.ndarray, int]:
    """Read ``count`` canonical LEB128 values from the front of ``buf``; return (uint64 values, bytes used)."""
    if count == 0:
        return np.zeros(0, dtype=np.uint64), 0
    ends = np.flatnonzero((buf & 0x80) == 0)
    if ends.size < count:
        raise CodecError(f"corrupt payload: {what} stream is truncated")
    ends = ends[:count]
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if lengths.max() > max_groups:
        raise CodecError(f"corrupt payload: {what} value too large")
    if np.any((lengths > 1) & (buf[ends] == 0)):
        raise CodecError(f"corrupt payload: non-canonical {what} encoding")
    values = np.zeros(count, dtype=np.uint64)
    for g in range(int(lengths.max())):
        sel = lengths > g
        values[sel] |= (buf[starts[sel] + g].astype(np.uint64) & np.uint64(0x7F)) << np.uint64(7 * g)
    return values, int(ends[-1]) + 1


def encode_counts(n_wk: np.ndarray) -> bytes:
    """Encode a non-negative integer count matrix of shape (V, K) as a sparse, compressed payload."""
    arr = np.asarray(n_wk)
    if arr.ndim != 2:
        raise CodecError(f"counts must be a 2-D (V, K) matrix, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
        raise CodecError(f"counts must have an integer dtype, got {arr.dtype}")
    n_words, n_topics = arr.shape
    if n_words == 0 or n_topics == 0 or n_words * n_topics > MAX_CELLS:
        raise CodecError(f"count matrix shape {arr.shape} is empty or larger than {MAX_CELLS} cells")
    flat = arr.reshape(-1)
    idx = np.flatnonzero(flat)
    vals = flat[idx].astype(np.int64)
    if vals.size and vals.min() < 0:
        w, k = divmod(int(idx[np.argmin(vals)]), n_topics)
        raise CodecError(f"negative count {int(vals.min())} at word {w}, topic {k}")
    if vals.size and vals.max() > MAX_COUNT:
        raise CodecError(f"count {int(vals.max())} exceeds {MAX_COUNT}")
    gaps = np.diff(idx, prepend=0).astype(np.uint64)
    body = _varint_encode(gaps).tobytes() + _varint_encode(vals.astype(np.uint64)).tobytes()
    header = HEADER.pack(MAGIC, VERSION, bytes(3), n_words, n_topics, idx.size, len(body))
    return header + zlib.compress(body, ZLIB_LEVEL)


def _inflate(compressed: bytes, body_len: int) -> bytes:
    """Inflate at most body_len + 1 bytes (zlib's max_length=0 would mean unlimited), then demand an exact fit."""
    inflater = zlib.decompressobj()
    try:
        body = inflater.decompress(compressed, body_len + 1)
    except zlib.error:
        raise CodecError("corrupt payload: compressed body is damaged") from None
    if len(body) != body_len or not inflater.eof:
        raise CodecError("corrupt payload: compressed body does not match the header's length")
    if inflater.unused_data:
        raise CodecError("corrupt payload: trailing bytes after the compressed body")
    return body


def decode_counts(blob: bytes, *, expected_shape: tuple[int, int] | None = None) -> np.ndarray:
    """Decode a payload from ``encode_counts`` into an int32 (V, K) matrix; CodecError if it is not exactly one."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise CodecError("payload must be bytes")
    blob = bytes(blob)
    if len(blob) < HEADER.size:
        raise CodecError(f"payload is truncated: {len(blob)} bytes, header needs {HEADER.size}")
    magic, version, reserved, n_words, n_topics, nnz, body_len = HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise CodecError("not a fedtopic count payload (bad magic)")
    if version != VERSION:
        raise CodecError(f"unsupported count payload version {version} (this fedtopic reads {VERSION})")
    if reserved != bytes(3):
        raise CodecError("corrupt payload: reserved header bytes are not zero")
    if expected_shape is not None and (n_words, n_topics) != tuple(expected_shape):
        exp_v, exp_k = expected_shape
        raise CodecError(f"vocabulary mismatch: payload has V={n_words} K={n_topics}, expected V={exp_v} K={exp_k}")
    cells = n_words * n_topics
    if cells == 0 or cells > MAX_CELLS:
        raise CodecError(f"payload shape V={n_words} K={n_topics} is empty or larger than {MAX_CELLS} cells")
    if nnz > cells:
        raise CodecError(f"corrupt payload: {nnz} non-zero cells in a {n_words}x{n_topics} matrix")
    if not 2 * nnz <= body_len <= nnz * (_MAX_INDEX_VARINT + _MAX_COUNT_VARINT):
        raise CodecError(f"corrupt payload: body length {body_len} impossible for {nnz} non-zero cells")
    buf = np.frombuffer(_inflate(blob[HEADER.size:], body_len), dtype=np.uint8)
    gaps, used = _varint_decode(buf, nnz, _MAX_INDEX_VARINT, "index")
    counts, used_counts = _varint_decode(buf[used:], nnz, _MAX_COUNT_VARINT, "count")
    if used + used_counts != buf.size:
        raise CodecError("corrupt payload: trailing bytes after the counts")
    if nnz and np.any(gaps[1:] == 0):
        raise CodecError("corrupt payload: cell indices are not strictly increasing")
    flat_idx = np.cumsum(gaps, dtype=np.uint64)
    if nnz and flat_idx[-1] >= np.uint64(cells):
        raise CodecError("corrupt payload: cell index out of range")
    if nnz and (counts.min() == 0 or counts.max() > MAX_COUNT):
        raise CodecError(f"corrupt payload: count out of range [1, {MAX_COUNT}]")
    out = np.zeros(cells, dtype=np.int32)
    out[flat_idx.astype(np.int64)] = counts.astype(np.int32)
    return out.reshape(n_words, n_topics)
