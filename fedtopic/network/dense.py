"""Wire format of dense arrays (gradients, NMF factors, perturbed counts): NPY v1.0, no pickle.

Used by the ``dense-sum`` combiner for algorithms whose updates are real-valued
or may be negative (iFTM's and SUB-LDA's Laplace/Gaussian-perturbed counts,
FedNMF's factors, gFedNTM's gradients). The decoder trusts nothing: exact
dtype (little-endian), C order, exact shape, exact byte length, finite values.
"""

from __future__ import annotations

import io

import numpy as np

from fedtopic.network.errors import InvalidPayload

DTYPES = ("float64", "float32", "int64")
MAX_ELEMENTS = 1 << 28
DENSE_HEADER_MAX = 1 << 16  # NPY v1.0 headers are at most 65,535 bytes (a u16 length) plus the preamble


def encode_dense(arr: np.ndarray) -> bytes:
    """NPY bytes of ``arr`` as a C-ordered little-endian array of one of ``DTYPES``."""
    a = np.asarray(arr)
    if a.dtype.name not in DTYPES:
        raise InvalidPayload(f"dense payload dtype must be one of {', '.join(DTYPES)}, got {a.dtype}")
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")), version=(1, 0),
                              allow_pickle=False)
    return buf.getvalue()


def decode_dense(blob: bytes, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """The array in ``blob``; InvalidPayload unless it is exactly ``shape`` of ``dtype`` with finite values."""
    buf = io.BytesIO(blob)
    try:
        version = np.lib.format.read_magic(buf)
        if version != (1, 0):
            raise InvalidPayload(f"dense payload must be NPY version 1.0, got {version}")
        got_shape, fortran, got_dtype = np.lib.format.read_array_header_1_0(buf)
    except InvalidPayload:
        raise
    except Exception as exc:  # numpy raises ValueError/SyntaxError/... for a damaged header
        raise InvalidPayload(f"dense payload is not an NPY array: {exc}") from None
    want = np.dtype(dtype).newbyteorder("<")
    if got_dtype != want:
        raise InvalidPayload(f"dense payload dtype {got_dtype.str} differs from the session's {want.str}")
    if fortran:
        raise InvalidPayload("dense payload must be C-ordered")
    if tuple(got_shape) != tuple(shape):
        raise InvalidPayload(f"dense payload shape {tuple(got_shape)} differs from the session's {tuple(shape)}")
    data = blob[buf.tell():]
    expected = int(np.prod(shape, dtype=np.int64)) * want.itemsize
    if len(data) != expected:
        raise InvalidPayload(f"dense payload body is {len(data)} bytes, shape {tuple(shape)} needs {expected}")
    arr = np.frombuffer(data, dtype=want).reshape(shape)
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        bad = np.unravel_index(int(np.flatnonzero(~np.isfinite(arr.reshape(-1)))[0]), shape)
        raise InvalidPayload(f"dense payload has a NaN or infinite value at index {tuple(int(i) for i in bad)}")
    return arr
