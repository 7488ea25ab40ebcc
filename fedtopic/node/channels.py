"""A party's channels on the aggregator: one session per ``Channel``, behind one encode / send / decode surface.

``dense`` channels are summing sessions of float64 vectors (``dense_session``: in the clear under ``none``,
masked fixed point under ``mask``, the launcher sealing the mask secret for every party); ``topics`` channels are
sessions of the protection's ``topics`` combiner (``topic-merge`` under ``none``, the only protection that carries
them: iFTM's master, which sees every party's normalised topics).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from fedtopic.algorithms.federated import Aggregate, Channel, TopicsUpdate
from fedtopic.crypto.keys import PartyKeys
from fedtopic.errors import ConfigError
from fedtopic.network.client import (
    AggregateResult,
    AggregatorClient,
)
from fedtopic.network.topic_merge import decode_global, encode_update
from fedtopic.node.dense_session import DenseSession, WaitReport, open_dense_session
from fedtopic.protections import Protection, require_carries


class ChannelSession(Protocol):
    """One opened channel."""

    channel: Channel
    client: AggregatorClient

    def encode(self, update: Any, seq: int) -> bytes: ...

    def send(self, payload: bytes, seq: int, timeout: float, on_wait: WaitReport | None = None) -> AggregateResult: ...

    def decode(self, result: AggregateResult, seq: int) -> Aggregate: ...


def update_digest(update: np.ndarray | TopicsUpdate) -> str:
    """sha256 of an update's content (what a restarted party must recompute identically)."""
    h = hashlib.sha256()
    if isinstance(update, TopicsUpdate):
        h.update(np.ascontiguousarray(update.topics, dtype=np.float64).tobytes())
        h.update(np.float64(update.amount).tobytes())
    else:
        h.update(np.ascontiguousarray(update, dtype=np.float64).tobytes())
    return h.hexdigest()


class DenseChannel:
    """A ``dense`` channel over a dense session."""

    def __init__(self, channel: Channel, session: DenseSession) -> None:
        self.channel, self.session, self.client = channel, session, session.client

    def encode(self, update: Any, seq: int) -> bytes:
        if not isinstance(update, np.ndarray):
            raise TypeError(f"channel {self.channel.name!r} is dense: send a float64[{self.channel.size}] array")
        return self.session.encode(update, seq)

    def send(self, payload: bytes, seq: int, timeout: float, on_wait: WaitReport | None = None) -> AggregateResult:
        return self.session.send(payload, seq, timeout, on_wait)

    def decode(self, result: AggregateResult, seq: int) -> Aggregate:
        value = self.session.decode(result.payload, seq, len(result.contributors))
        return Aggregate(value, tuple(result.contributors))


class TopicsChannel:
    """A ``topics`` channel over a ``topic-merge`` session."""

    def __init__(self, channel: Channel, client: AggregatorClient) -> None:
        self.channel, self.client = channel, client

    def encode(self, update: Any, seq: int) -> bytes:
        if not isinstance(update, TopicsUpdate):
            raise TypeError(f"channel {self.channel.name!r} carries topics: send a TopicsUpdate")
        return encode_update(update.topics, update.amount)

    def send(self, payload: bytes, seq: int, timeout: float, on_wait: WaitReport | None = None) -> AggregateResult:
        return self.client.exchange(seq, payload, timeout, on_wait=on_wait)

    def decode(self, result: AggregateResult, seq: int) -> Aggregate:
        return Aggregate(decode_global(result.payload, self.channel.size), tuple(result.contributors))


def open_channel(client: AggregatorClient, channel: Channel, ids: Sequence[str], keys: PartyKeys,
                 publics: Sequence[bytes], *, launcher: str, protection: Protection, params: Mapping[str, Any],
                 timeout: float, key_bits: int = 2048) -> ChannelSession:
    """Open or join ``client``'s session for ``channel``; ``params`` name what every party must agree on (a party
    whose params differ is refused by the aggregator or by the check against the launcher's)."""
    params = dict(params) | {"channel": channel.name}
    if channel.kind == "dense":
        session = open_dense_session(client, ids, keys, publics, launcher=launcher, protection=protection,
                                     n=channel.size,
                                     params=params, timeout=timeout, dtype=channel.meta.get("dtype", "float64"),
                                     key_bits=key_bits)
        return DenseChannel(channel, session)
    if channel.kind == "topics":
        require_carries(protection, "topics", f"channel {channel.name!r}")
        client.open_session(ids, combiner=protection.combiner("topics"), meta=dict(channel.meta), params=params)
        return TopicsChannel(channel, client)
    raise ConfigError(f"channel {channel.name!r} has kind {channel.kind!r}, which no session carries")
