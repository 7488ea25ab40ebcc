"""Dense bit-packing of b-bit residues (1 <= b <= 64): the wire form of ``mask`` updates and aggregates.

Layout: value i occupies bits [i·b, (i+1)·b) of one little-endian bit stream
(bit j of the stream is bit j % 8 of byte j // 8), least significant bit
first; only the low b bits of each value are kept. The stream is
``packed_size(n, b)`` = ⌈n·b / 8⌉ bytes and its padding bits (past n·b) are
zero, so one vector has exactly one packed form and the size of a packed
blob depends only on (n, b), never on the values.

The kernels work on uint64 words (numba, no I/O); ``add_packed`` fuses
unpacking with modular accumulation so the aggregator sums P updates in one
pass over each payload without materialising them.
"""

from __future__ import annotations

import sys

import numpy as np
from numba import njit

from fedtopic.crypto.errors import CodecError

MAX_BITS = 64


def packed_size(n: int, bits: int) -> int:
    """Bytes of ``n`` packed ``bits``-bit values."""
    _check_bits(bits)
    return (n * bits + 7) // 8


def _check_bits(bits: int) -> None:
    if not 1 <= bits <= MAX_BITS:
        raise CodecError(f"bit width must be in [1, {MAX_BITS}], got {bits}")


def _low_mask(bits: int) -> np.uint64:
    return np.uint64((1 << bits) - 1)


@njit(cache=True, nogil=True)
def _pack_kernel(values: np.ndarray, bits: int, mask: np.uint64, out: np.ndarray) -> None:  # pragma: no cover
    """out (uint64[⌈n·b/64⌉], zeroed) <- the low ``bits`` of every value, LSB first."""
    acc = np.uint64(0)
    fill = 0  # bits already in acc
    w = 0
    for i in range(values.size):
        v = np.uint64(values[i]) & mask
        acc |= v << np.uint64(fill)
        fill += bits
        if fill >= 64:
            out[w] = acc
            w += 1
            fill -= 64
            acc = (v >> np.uint64(bits - fill)) if fill > 0 else np.uint64(0)
    if fill > 0:
        out[w] = acc


@njit(cache=True, nogil=True)
def _add_kernel(words: np.ndarray, bits: int, mask: np.uint64, acc: np.ndarray) -> None:  # pragma: no cover
    """acc[i] += value i of the packed ``words`` (wrapping in acc's dtype)."""
    for i in range(acc.size):
        off = i * bits
        w = off >> 6
        s = off & 63
        v = words[w] >> np.uint64(s)
        if s + bits > 64:
            v |= words[w + 1] << np.uint64(64 - s)
        acc[i] += v & mask


def check_packed(blob: bytes | memoryview, n: int, bits: int) -> None:
    """CodecError unless ``blob`` is the canonical packed form of ``n`` ``bits``-bit values (size, zero padding)."""
    size = packed_size(n, bits)
    if len(blob) != size:
        raise CodecError(f"packed stream has {len(blob)} bytes, {n} values of {bits} bits need {size}")
    tail = n * bits % 8
    if tail and blob[size - 1] >> tail:
        raise CodecError("packed stream has non-zero padding bits")


def _words(blob: bytes | memoryview, n: int, bits: int) -> np.ndarray:
    """The packed stream as native uint64 words (checked canonical)."""
    check_packed(blob, n, bits)
    size = packed_size(n, bits)
    words = np.zeros((size + 7) // 8, dtype=np.uint64)
    words.view(np.uint8)[:size] = np.frombuffer(blob, dtype=np.uint8)
    return words.byteswap() if sys.byteorder == "big" else words  # the stream's words are little-endian


def pack_bits(values: np.ndarray, bits: int) -> bytes:
    """The low ``bits`` bits of each of ``values`` (1-D unsigned integers), densely packed."""
    _check_bits(bits)
    arr = np.ascontiguousarray(values)
    if arr.ndim != 1 or arr.dtype.kind != "u":
        raise CodecError(f"pack_bits takes a 1-D unsigned integer array, got {arr.ndim}-D {arr.dtype}")
    n = arr.size
    out = np.zeros((n * bits + 63) // 64, dtype=np.uint64)
    _pack_kernel(arr, bits, _low_mask(bits), out)
    return out.astype("<u8", copy=False).view(np.uint8)[:packed_size(n, bits)].tobytes()


def add_packed(acc: np.ndarray, blob: bytes | memoryview, bits: int) -> None:
    """acc += unpack(blob) elementwise, wrapping modulo acc's width (uint16, uint32 or uint64, 1-D, writable)."""
    _check_bits(bits)
    if acc.ndim != 1 or acc.dtype not in (np.uint16, np.uint32, np.uint64) or not acc.flags.c_contiguous:
        raise CodecError(f"accumulator must be a contiguous 1-D uint16, uint32 or uint64 array, got {acc.dtype}")
    if bits > 8 * acc.dtype.itemsize:
        raise CodecError(f"a {acc.dtype} accumulator cannot hold {bits}-bit values")
    _add_kernel(_words(blob, acc.size, bits), bits, _low_mask(bits), acc)


def unpack_bits(blob: bytes | memoryview, n: int, bits: int) -> np.ndarray:
    """The ``n`` values of ``blob`` in the smallest of uint16, uint32, uint64 that holds ``bits``."""
    _check_bits(bits)
    out = np.zeros(n, dtype=np.uint16 if bits <= 16 else np.uint32 if bits <= 32 else np.uint64)
    add_packed(out, blob, bits)
    return out
