"""``topic-merge``: the iFTM master (Algs. 3 and 5) as an aggregator combiner, and its wire format.

An update is one party's topic-wise normalised local model M̂_p and its data
amount n_p (both of which the master learns):

    b"FTTM" | version u8 | 3 zero bytes | K_p u32 | V u32 | n_p f64 | NPY float64[K_p, V]

The aggregate is the global model M* with the data amount behind each topic:

    NPY float64[K*, V + 1]   (column V holds the weights)

Session meta: {"vocabulary": V, "xi": ξ, "top_words": L, "max_topics": K_max}.
The combine is a pure function of the accepted updates in party order
(``integrate_all``), so every replay gives the same bytes. Validation refuses
anything that is not a normalised model: wrong V, K_p outside 1..K_max, a
negative or non-finite value, a row that does not sum to 1, n_p ≤ 0.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fedtopic.errors import ModelError
from fedtopic.models.topic_merge import (
    GlobalModel,
    check_merge_params,
    integrate_all,
)
from fedtopic.network.dense import DENSE_HEADER_MAX, decode_dense, encode_dense
from fedtopic.network.errors import InvalidMeta, InvalidPayload

MAGIC = b"FTTM"
HEADER = struct.Struct("<4sB3sIId")
MAX_VOCABULARY = 1 << 22
MAX_TOPICS = 100_000


def encode_update(model: np.ndarray, amount: float) -> bytes:
    """The wire form of a normalised local model float64[K_p, V] and its data amount."""
    k, v = model.shape
    return HEADER.pack(MAGIC, 1, b"\0\0\0", k, v, float(amount)) + encode_dense(np.ascontiguousarray(model, np.float64))


def decode_update(payload: bytes, meta: Mapping[str, Any]) -> tuple[np.ndarray, float]:
    """(M̂_p float64[K_p, V], n_p), checked against the session ``meta``; InvalidPayload otherwise."""
    v, _, _, max_topics = parse_meta(meta)
    if len(payload) < HEADER.size:
        raise InvalidPayload(f"topic-merge update is truncated: {len(payload)} bytes")
    magic, version, pad, k, got_v, amount = HEADER.unpack_from(payload)
    if magic != MAGIC or version != 1 or pad != b"\0\0\0":
        raise InvalidPayload("not a topic-merge update (magic/version)")
    if got_v != v or not 1 <= k <= max_topics:
        raise InvalidPayload(f"update of {k} topics × V={got_v}; the session takes 1..{max_topics} topics × V={v}")
    if not (np.isfinite(amount) and amount > 0):
        raise InvalidPayload(f"data amount must be positive, got {amount}")
    model = decode_dense(payload[HEADER.size:], (k, v), "float64")
    if model.min() < 0 or not np.allclose(model.sum(axis=1), 1.0, atol=1e-6):
        raise InvalidPayload("every topic must be a distribution over the vocabulary (topic-wise normalised)")
    return model, float(amount)


def encode_global(model: GlobalModel) -> bytes:
    return encode_dense(np.hstack([model.topics, model.weights[:, None]]))


def decode_global(payload: bytes, vocabulary: int) -> GlobalModel:
    """M* from an aggregate; InvalidPayload if it is not one."""
    stream = io.BytesIO(payload)
    try:
        np.lib.format.read_magic(stream)
        shape, _, _ = np.lib.format.read_array_header_1_0(stream)
    except Exception as exc:  # numpy raises several types for a damaged header
        raise InvalidPayload(f"not a global model: {exc}") from None
    if len(shape) != 2 or shape[1] != vocabulary + 1:
        raise InvalidPayload(f"global model of shape {shape}, expected (K*, {vocabulary + 1})")
    arr = decode_dense(payload, tuple(shape), "float64")
    return GlobalModel(arr[:, :vocabulary].copy(), arr[:, vocabulary].copy())


def parse_meta(meta: Mapping[str, Any]) -> tuple[int, float, int, int]:
    """(V, ξ, L, K_max) of a session meta; InvalidMeta naming the bad field."""
    v, xi, top, k = meta.get("vocabulary"), meta.get("xi"), meta.get("top_words"), meta.get("max_topics")
    if not (isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_VOCABULARY):
        raise InvalidMeta(f"meta.vocabulary must be an integer in 1..{MAX_VOCABULARY}, got {v!r}")
    if not (isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= MAX_TOPICS):
        raise InvalidMeta(f"meta.max_topics must be an integer in 1..{MAX_TOPICS}, got {k!r}")
    if not (isinstance(top, int) and not isinstance(top, bool)) or not isinstance(xi, (int, float)) or \
            isinstance(xi, bool):
        raise InvalidMeta("meta.xi must be a number and meta.top_words an integer")
    try:
        check_merge_params(float(xi), top)
    except ModelError as exc:
        raise InvalidMeta(f"meta: {exc}") from None
    return v, float(xi), top, k


class TopicMergeCombiner:
    """Alg. 5's master step: the accepted normalised local models merged, in party order, into M*."""

    name = "topic-merge"
    min_contributors = 1

    def check_meta(self, meta: Mapping[str, Any]) -> None:
        parse_meta(meta)

    def max_update_bytes(self, meta: Mapping[str, Any]) -> int:
        v, _, _, k = parse_meta(meta)
        return HEADER.size + DENSE_HEADER_MAX + k * v * 8

    def validate(self, payload: bytes, meta: Mapping[str, Any], *, round: int | None = None,
                 session: str | None = None, sender: int | None = None) -> None:
        decode_update(payload, meta)

    def combine(self, payloads: Sequence[bytes], ctx: Any) -> bytes:
        _, xi, top, _ = parse_meta(ctx.meta)
        return encode_global(integrate_all([decode_update(p, ctx.meta) for p in payloads], xi=xi, top=top))
