"""What a link is: how parties' messages travel, one registered object per way (``fedtopic.links.registry``).

A link serves one mode and has one shape, as a Flower connection adapter or a web3.py provider does:
``connect(where)`` gives a connection, which ``exchange``-s messages, says what its publications cost, may carry a
clock, and is closed.

* ``mode = "sync"``: a party's wire to the aggregator. ``connect(AggregatorAt(url, timeout))`` gives a ``Wire``
  whose ``exchange(method, path, ...)`` is one HTTP request and its whole ``Answer``; signing, retries, witnesses
  and the session protocol are ``network.client.AggregatorClient``'s, above every wire. Built in: ``http``,
  ``in-process``.
* ``mode = "async"``: the channels of an asynchronous consortium in one process. ``connect(Channels(...))`` gives
  a ``Board`` whose ``channel(party)`` is that party's ``ChannelTransport`` (publish its counts, read the latest of
  the channels it may read); ``publication()`` is what the run put on it (a chain's transactions and gas). Built
  in: ``memory``, ``chain`` (an embedded chain with the real contracts).

A link fails a request with ``TransportFailure`` (no answer came: retried by the client) and never otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from fedtopic.node.transport import ChannelTransport

LinkMode = Literal["sync", "async"]


@dataclass(frozen=True)
class Answer:
    """A complete HTTP response: status, body, headers (looked up case-insensitively)."""

    status: int
    body: bytes
    headers: Mapping[str, str]

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class TransportFailure(Exception):
    """The request got no answer (refused, reset, timed out, TLS failed); ``certificate``: the server's TLS
    certificate was refused, which no retry mends."""

    def __init__(self, message: str, certificate: bool = False) -> None:
        super().__init__(message)
        self.certificate = certificate


@dataclass(frozen=True)
class AggregatorAt:
    """Where a synchronous link connects: the aggregator's ``url`` (``http(s)://host:port``, or what the link's own
    aggregators are named by) and the seconds a request may take by default."""

    url: str
    timeout: float = 30.0


@dataclass(frozen=True)
class Channels:
    """Where an asynchronous link connects: the parties, who reads whose channel (CP: owner → readers), the shape
    of a publication (int32[V, K]) and the run's seed (the keys of a simulated chain's parties)."""

    parties: Sequence[str]
    readers: Mapping[str, Sequence[str]]
    shape: tuple[int, int]
    seed: int = 0


class Wire(Protocol):
    """A synchronous connection: requests to one aggregator (thread-safe: parties of one process share none, but
    a party's channels may send at once)."""

    def exchange(self, method: str, path: str, *, body: bytes = b"", headers: Mapping[str, str],
                 params: Mapping[str, Any] | None = None, timeout: float | None = None) -> Answer:
        """One request (``params``: its query, sent url-encoded in this order, which is what was signed) and its
        whole answer; TransportFailure if none came."""

    def close(self) -> None:
        """Drop what the wire keeps open; another exchange may reopen it."""


class Board(Protocol):
    """An asynchronous connection: every party's channel, and what the run put on them."""

    def channel(self, party: str) -> ChannelTransport:
        """``party``'s view of the channels (``node.transport.ChannelTransport``)."""

    def publication(self) -> Mapping[str, Any]:
        """What every publication so far cost, for the run's summary (e.g. ``chain_transactions``,
        ``chain_gas_used``); {} where there is nothing beyond the bytes each channel counts."""

    def close(self) -> None:
        """Release the board (a chain's process, its files)."""


class Link(Protocol):
    """A registered way for messages to travel: its name, its mode, one line for `fedtopic algorithms --links`, and
    ``connect`` (an ``AggregatorAt`` gives a ``Wire``, a ``Channels`` a ``Board``)."""

    name: str
    mode: LinkMode
    summary: str

    def connect(self, where: Any) -> Any: ...
