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
"""

from __future__ import annotations

import struct

import numpy as np

from fedtopic.network.dense import DTYPES, decode_dense, encode_dense
from fedtopic.network.errors import InvalidPayload

MAGIC = b"FTBITS\x00\x01"
HEADER = struct.Struct("<8sB7xQ")


def encode_sparse(arr: np.ndarray) -> bytes:
    """The bitmap form of ``arr`` (any shape; C-order elements)."""
    flat = np.ascontiguousarray(arr).reshape(-1)
    if flat.dtype.name not in DTYPES:
        raise InvalidPayload(f"sparse payload dtype must be one of {', '.join(DTYPES)}, got {flat.dtype}")
    mask = flat != 0
    head = HEADER.pack(MAGIC, DTYPES.index(flat.dtype.name), flat.size)
    values = flat[mask].astype(flat.dtype.newbyteorder("<"))
    return head + np.packbits(mask, bitorder="little").tobytes() + values.tobytes()


def encode_array(arr: np.ndarray) -> bytes:
    """The smaller of the two forms of ``arr``."""
    a = np.asarray(arr)
    nonzero = int(np.count_nonzero(a))
    if HEADER.size + -(-a.size // 8) + nonzero * a.dtype.itemsize < a.size * a.dtype.itemsize:
        return encode_sparse(a)
    return encode_dense(a)


def decode_array(blob: bytes, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """The dense array in ``blob`` (either form); InvalidPayload unless it is exactly ``shape`` of ``dtype``
    with finite values."""
    if not blob.startswith(MAGIC):
        return decode_dense(blob, shape, dtype)
    if len(blob) < HEADER.size:
        raise InvalidPayload("sparse payload is shorter than its header")
    _, code, n = HEADER.unpack_from(blob)
    size = int(np.prod(shape, dtype=np.int64))
    if code >= len(DTYPES) or DTYPES[code] != dtype:
        raise InvalidPayload(f"sparse payload dtype code {code} is not the session's {dtype}")
    if n != size:
        raise InvalidPayload(f"sparse payload has {n} elements, shape {tuple(shape)} needs {size}")
    n_bytes = -(-n // 8)
    if len(blob) < HEADER.size + n_bytes:
        raise InvalidPayload(f"sparse payload is {len(blob)} bytes, shorter than its {n}-element bitmap")
    bits = np.unpackbits(np.frombuffer(blob, np.uint8, n_bytes, HEADER.size), bitorder="little")
    if bits[n:].any():
        raise InvalidPayload("sparse payload sets a bitmap padding bit")
    mask = bits[:n].astype(bool)
    m = int(mask.sum())
    want = np.dtype(dtype).newbyteorder("<")
    expected = HEADER.size + n_bytes + m * want.itemsize
    if len(blob) != expected:
        raise InvalidPayload(f"sparse payload is {len(blob)} bytes, its bitmap of {m} entries needs {expected}")
    values = np.frombuffer(blob, want, m, HEADER.size + n_bytes)
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        raise InvalidPayload("sparse payload has a NaN or infinite value at index "
                             f"{int(np.flatnonzero(mask)[np.flatnonzero(~np.isfinite(values))[0]])}")
    out = np.zeros(size, dtype=want)
    out[mask] = values
    return out.reshape(shape)
