"""How a synchronous party reaches the others: a *link* gives it one client per aggregator session.

The party runtime (``sync_runtime``) and its channels only ever call a session client's protocol (``SessionLink``):
open or join the session, read it, exchange an update for the round's aggregate (sending mask recovery messages
when asked), say the party finished, or leave it for a fresh run. Which wire carries those calls is a registered
link's (``fedtopic.links``: ``http``, ``in-process`` or a plugin's), named by ``[aggregator] link`` in
consortium.toml or ``--link``: ``AggregatorLink`` carries the name to every session client it makes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fedtopic.crypto.keys import PartyKeys
from fedtopic.network.client import AggregateResult, AggregatorClient
from fedtopic.network.schemas import SessionOut, SessionProgress


class SessionLink(Protocol):
    """One party's client of one aggregator session (``network.client.AggregatorClient`` is one)."""

    session: str
    url: str

    def open_session(self, parties: Sequence[str], *, combiner: str | None = None,
                     meta: Mapping[str, Any] | None = None, params: Mapping[str, Any] | None = None,
                     straggler_deadline_seconds: float | None = None) -> SessionOut: ...
    def session_info(self) -> SessionOut: ...
    def exchange(self, round: int, payload: bytes, timeout: float, *,
                 recovery: Callable[[list[str]], bytes] | None = None,
                 on_wait: Callable[[int, list[str], float], None] | None = None,
                 read_if_closed: bool = False) -> AggregateResult: ...
    def finished(self) -> SessionProgress: ...
    def abandon(self) -> SessionProgress: ...
    def progress(self) -> SessionProgress | None: ...
    def close(self) -> None: ...


class Link(Protocol):
    """A party's way to the aggregator: ``session(id)`` gives a client of that session, signed with ``keys``."""

    url: str
    keys: PartyKeys

    def session(self, session: str, *, patience: float | None = None,
                timeout: float | None = None) -> AggregatorClient: ...


@dataclass(frozen=True)
class AggregatorLink:
    """The aggregator at ``url`` through the registered synchronous link ``link`` (``fedtopic.links``);
    ``patience``: how long a request retries an unreachable one; ``roster``: every member's address (from
    consortium.toml), with which each session's aggregates are witnessed and checked across the members
    (``crypto.witness``; None: not checked)."""

    url: str
    keys: PartyKeys
    patience: float = 600.0
    roster: Mapping[str, str] | None = None
    link: str = "http"

    def session(self, session: str, *, patience: float | None = None,
                timeout: float | None = None) -> AggregatorClient:
        return AggregatorClient(self.url, self.keys, session, patience=self.patience if patience is None else patience,
                                roster=self.roster, link=self.link, **({} if timeout is None else {"timeout": timeout}))
