"""A ``dense-sum`` vector's two wire forms: NPY (``dense``) or, when it has many zeros, a bitmap and its nonzeros.

gFedNTM's gradient of the encoder's first layer is zero in every column whose word no document of the node's
batch holds (about four in five columns on §4.1's synthetic data), so under protection ``none`` a node sends a
bit per element saying which are nonzero and only those values: at ProdLDA's V = 5,000, K = 50 the gradient
phase goes from 6.3 MB to about 3.3 MB per node. ``encode_array`` takes the smaller form; ``decode_array`` reads
either into the dense array, so a combiner sums them alike, in party order, with the same float64 additions (a
skipped entry is an added zero, which changes no sum). What the aggregator learns is unchanged: the dense
vector showed the same zeros.

Bitmap form, all little-endian: the 8-byte magic, the dtype's index in ``DTYPES`` (u8, 7 pad bytes), the
number of elements n (u64), ⌈n/8⌉ bytes of bits (element i is bit i % 8 of byte i // 8, the padding bits 0),
then one value of the dtype per set bit, in element order. The decoder trusts nothing: exact length, zero
padding, finite values.

The values move between the bitmap and the dense array in one numba pass each way (``_scatter``, ``_gather``):
numpy's boolean-mask indexing took 1.6 ms per direction for gFedNTM's 770,250-value gradient, and under load a
fifth of the aggregator's busy time went to it.
"""

from __future__ import annotations

import functools
import math
import struct
import threading

import numpy as np
from numba import njit

from fedtopic.network.dense import DTYPES, decode_dense, encode_dense
from fedtopic.network.errors import InvalidPayload

MAGIC = b"FTBITS\x00\x01"
HEADER = struct.Struct("<8sB7xQ")


_POPCOUNT = np.array([bin(b).count("1") for b in range(256)], dtype=np.int64)


@njit(cache=True, nogil=True, inline="always")
def _scatter_byte(b, base, width, values, j, last, out):  # pragma: no cover
    """The ``width`` elements of one bitmap byte ``b`` from ``base``; returns the next value index."""
    for k in range(width):
        bit = (b >> k) & 1
        v = values[min(j, last)]
        out[base + k] = v if bit else v - v  # v − v: a zero of v's type (values are finite)
        j += bit
    return j


@njit(cache=True, nogil=True)
def _scatter(bits: np.ndarray, values: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """out[i] ← the next of ``values`` for every set bit i of ``bits`` (uint8, element i is bit i % 8 of byte
    i // 8), zero elsewhere; n = len(out) elements, at least one value. Branch-free within a byte (a select, the
    read index clamped to the last value): half the time of testing each bit."""
    n = out.shape[0]
    j = 0
    last = values.shape[0] - 1
    for at in range(n // 8):
        if bits[at]:
            j = _scatter_byte(bits[at], at * 8, 8, values, j, last, out)
    if n % 8 and bits[n // 8]:
        _scatter_byte(bits[n // 8], n - n % 8, n % 8, values, j, last, out)


@njit(cache=True, nogil=True, inline="always")
def _gather_byte(flat, b, base, width, values, j):  # pragma: no cover
    """The set elements among ``width`` of one bitmap byte ``b`` from ``base``; returns the next value index."""
    for k in range(width):
        values[j] = flat[base + k]
        j += (b >> k) & 1
    return j


@njit(cache=True, nogil=True)
def _gather(flat: np.ndarray, bits: np.ndarray, values: np.ndarray) -> None:  # pragma: no cover
    """values[:m] ← the m elements of ``flat`` whose bit is set in ``bits`` (as in ``_scatter``), in element order.
    ``values`` has one slot more than m: every element of a byte is written at the running index, which only a
    set bit advances, so a write may land in the spare slot."""
    n = flat.shape[0]
    j = 0
    for at in range(n // 8):
        if bits[at]:
            j = _gather_byte(flat, bits[at], at * 8, 8, values, j)
    if n % 8 and bits[n // 8]:
        _gather_byte(flat, bits[n // 8], n - n % 8, n % 8, values, j)


def _native(dtype: str) -> np.dtype:
    """The numpy dtype ``dtype`` in this machine's byte order (the kernels take native arrays)."""
    return np.dtype(dtype).newbyteorder("=")


def _nonzeros(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(``arr``'s C-order elements, which are nonzero, how many): one comparison pass."""
    flat = np.ascontiguousarray(arr).reshape(-1)
    nonzero = flat != 0
    return flat, nonzero, int(np.count_nonzero(nonzero))


def encode_sparse(arr: np.ndarray) -> bytes:
    """The bitmap form of ``arr`` (any shape; C-order elements)."""
    return _encode_bits(*_nonzeros(arr))


def _encode_bits(flat: np.ndarray, nonzero: np.ndarray, m: int) -> bytes:
    """The bitmap form of ``flat`` (1-d, C-contiguous), given ``nonzero`` (flat != 0) and its count ``m``."""
    if flat.dtype.name not in DTYPES:
        raise InvalidPayload(f"sparse payload dtype must be one of {', '.join(DTYPES)}, got {flat.dtype}")
    bits = np.packbits(nonzero, bitorder="little")
    values = np.empty(m + 1, dtype=_native(flat.dtype.name))
    _gather(flat.astype(values.dtype, copy=False), bits, values)
    head = HEADER.pack(MAGIC, DTYPES.index(flat.dtype.name), flat.size)
    return b"".join((head, bits, values[:m].astype(values.dtype.newbyteorder("<"), copy=False)))


def encode_array(arr: np.ndarray) -> bytes:
    """The smaller of the two forms of ``arr`` (one comparison pass decides and, if sparse, gives the bitmap)."""
    a = np.asarray(arr)
    flat, nonzero, m = _nonzeros(a)
    if HEADER.size + -(-a.size // 8) + m * a.dtype.itemsize < a.size * a.dtype.itemsize:
        return _encode_bits(flat, nonzero, m)
    return encode_dense(a)


def decode_array(blob: bytes, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """The dense array in ``blob`` (either form); InvalidPayload unless it is exactly ``shape`` of ``dtype``
    with finite values."""
    if not blob.startswith(MAGIC):
        return decode_dense(blob, shape, dtype)
    if len(blob) < HEADER.size:
        raise InvalidPayload("sparse payload is shorter than its header")
    _, code, n = HEADER.unpack_from(blob)
    size = math.prod(int(n) for n in shape)
    if code >= len(DTYPES) or DTYPES[code] != dtype:
        raise InvalidPayload(f"sparse payload dtype code {code} is not the session's {dtype}")
    if n != size:
        raise InvalidPayload(f"sparse payload has {n} elements, shape {tuple(shape)} needs {size}")
    n_bytes = -(-n // 8)
    if len(blob) < HEADER.size + n_bytes:
        raise InvalidPayload(f"sparse payload is {len(blob)} bytes, shorter than its {n}-element bitmap")
    bits = np.frombuffer(blob, np.uint8, n_bytes, HEADER.size)
    if n % 8 and bits[-1] >> (n % 8):
        raise InvalidPayload("sparse payload sets a bitmap padding bit")
    m = int(_POPCOUNT[bits].sum())
    want = np.dtype(dtype).newbyteorder("<")
    expected = HEADER.size + n_bytes + m * want.itemsize
    if len(blob) != expected:
        raise InvalidPayload(f"sparse payload is {len(blob)} bytes, its bitmap of {m} entries needs {expected}")
    values = np.frombuffer(blob, want, m, HEADER.size + n_bytes).astype(_native(dtype), copy=False)
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        mask = np.unpackbits(bits, count=n, bitorder="little").astype(bool)
        raise InvalidPayload("sparse payload has a NaN or infinite value at index "
                             f"{int(np.flatnonzero(mask)[np.flatnonzero(~np.isfinite(values))[0]])}")
    out = np.zeros(size, dtype=values.dtype)
    _scatter(bits, values, out)
    return out.reshape(shape)


@functools.cache
def warm_up(dtype: str) -> None:
    """Load the kernels' compiled code for ``dtype`` now: the first call into numba in a process (the aggregator
    runs no other numba code for dense sessions) sets up its compiler and reads the cache, about 0.3 s that
    would otherwise land in the first round; later dtypes take milliseconds."""
    a = np.zeros(17, dtype=dtype)
    a[3] = 1
    decode_array(encode_sparse(a), a.shape, dtype)


_started: set[str] = set()
_started_lock = threading.Lock()


def warm_up_soon(dtype: str) -> None:
    """``warm_up`` in a background thread, started once per dtype in this process: every dense session asks, on
    a party (gFedNTM opens eight per party, a one-process simulation forty) and on the aggregator."""
    with _started_lock:
        if dtype in _started:
            return
        _started.add(dtype)
    threading.Thread(target=warm_up, args=(dtype,), name="warm-up", daemon=True).start()
