"""``counts`` channels: integer matrices summed by the aggregator under any protection that carries counts
(``fedtopic.protections``), and the consortium's secrets sealed on the first of them.

Secrets (paper §6.1 step 1): on the channel marked ``setup`` the launching party (first in the consortium file)
generates the Paillier key pair (``aggregator.key_bits``) or the mask secret and seals it for every party's X25519
key, itself included, as the session's params, so the aggregator stores only opaque bytes; the others poll the
session, open their copy and check that the session's meta and params are the ones they derive (another
consortium, vocabulary or option is refused in one line). The setup channel runs under the protection's
``setup()`` (packed Paillier for the Paillier schemes); later ``counts`` channels use the same secrets.

A round may close without this party (a straggler deadline): its update is refused, it reads the aggregate
anyway, and the contributors say it is not in. A masked round that lost parties asks the survivors for recovery
messages; one that failed outright (survivors missing too) is redone under the next aggregator round number,
which ``offset`` counts and the runtime checkpoints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fedtopic.algorithms.federated import Aggregate, Channel
from fedtopic.crypto.keys import PartyKeys
from fedtopic.crypto.protect import ProtectionContext, rank_words
from fedtopic.errors import ConfigError
from fedtopic.network.client import (
    AggregateResult,
    AggregatorClient,
)
from fedtopic.network.errors import AggregatorRejected
from fedtopic.node.dense_session import WaitReport
from fedtopic.node.protection import sealed_session
from fedtopic.protections import PartyCodec, Protection, Secrets, require_carries


class RoundFailed(Exception):
    """The aggregator failed the round (a masked round whose survivors went missing too): redo it."""


class CountsChannel:
    """One opened ``counts`` channel; ``offset``: aggregator round = seq + offset (failed rounds redone)."""

    def __init__(self, channel: Channel, client: AggregatorClient, prot: PartyCodec, ids: Sequence[str]) -> None:
        self.channel, self.client, self.prot, self.ids = channel, client, prot, list(ids)
        self.offset = 0
        self.recoveries = 0
        self.shape = tuple(channel.meta["shape"])

    def encode(self, update: Any, seq: int) -> bytes:
        counts = np.asarray(update)
        if counts.shape != self.shape:
            raise TypeError(f"channel {self.channel.name!r} carries counts of shape {self.shape}, got {counts.shape}")
        return self.prot.encode(counts, seq + self.offset)

    def send(self, payload: bytes, seq: int, timeout: float, on_wait: WaitReport | None = None) -> AggregateResult:
        rnd = seq + self.offset

        def recovery(dropped: list[str]) -> bytes:
            self.recoveries += 1
            return self.prot.recovery([self.ids.index(p) for p in dropped], rnd)

        try:  # a round closed without this party (a straggler deadline): it reads the aggregate anyway
            return self.client.exchange(rnd, payload, timeout, recovery=recovery, on_wait=on_wait,
                                        read_if_closed=True)
        except AggregatorRejected as exc:
            if exc.code == "round_failed":
                raise RoundFailed(rnd) from None
            raise

    def close(self) -> None:
        """Stop the obfuscator workers."""
        self.prot.close()

    def decode(self, result: AggregateResult, seq: int) -> Aggregate:
        total = self.prot.decode(result.payload, seq + self.offset)
        self.prot.prefill(self.prot.ciphertexts_per_update)  # the next update's obfuscators, during the sweep
        return Aggregate(total, tuple(result.contributors))


def session_meta(prot: PartyCodec, channel: Channel) -> dict[str, Any]:
    """The session's meta: the protection's, and the fewest contributors a released sum may have when the channel
    asks for it (distributed DP: the aggregator releases no round with fewer)."""
    least = channel.meta.get("min_contributors")
    return dict(prot.meta) | ({} if least is None else {"min_contributors": int(least)})


def _context(protection: Protection, client: AggregatorClient, keys: PartyKeys, ids: Sequence[str],
             publics: Sequence[bytes], channel: Channel, secrets: Secrets, delta: float) -> ProtectionContext:
    meta = channel.meta
    freqs = meta.get("word_frequencies")
    return protection.context(secrets, session=client.session, round=0, shape=tuple(meta["shape"]),
                              n_parties=len(ids), party_index=list(ids).index(keys.party_id),
                              max_value=int(meta["max_value"]), delta=delta,
                              word_ranking=None if freqs is None else rank_words(np.asarray(freqs)),
                              word_bounds=word_bounds(freqs),
                              x25519_private=keys.x25519_private_key, party_publics=tuple(publics))


def word_bounds(freqs: Any) -> np.ndarray | None:
    """int64[V]: a channel's consortium word frequencies as the bounds of its rows' summed cells, None unless
    they are exact non-negative counts (a count's row sums to its word's frequency over every party)."""
    if freqs is None:
        return None
    arr = np.asarray(freqs)
    if arr.ndim != 1 or not arr.size or not np.all(np.isfinite(arr)) or arr.min() < 0 or np.any(arr != np.floor(arr)):
        return None
    return arr.astype(np.int64)


def open_counts_channel(client: AggregatorClient, channel: Channel, ids: Sequence[str], keys: PartyKeys,
                        publics: Sequence[bytes], *, launcher: str, protection: Protection, params: Mapping[str, Any],
                        timeout: float,
                        key_bits: int, delta: float, straggler_deadline: float | None,
                        secrets: Secrets | None) -> tuple[CountsChannel, Secrets]:
    """Open or join ``channel``'s session; (the channel, the consortium's secrets: sealed here when the channel is
    the ``setup`` one, else ``secrets`` as established before)."""
    params = dict(params) | {"channel": channel.name}
    require_carries(protection, "counts", f"channel {channel.name!r}")
    if channel.meta.get("setup"):
        setup = protection.setup()
        secrets = _join_with_secrets(client, channel, ids, keys, publics, launcher, protection, params, timeout,
                                     key_bits, delta)
        prot = setup.counts(_context(setup, client, keys, ids, publics, channel, secrets, delta))
        return CountsChannel(channel, client, prot, ids), secrets
    if channel.meta.get("every_cell"):  # no word ranking to pick rows by: the setup scheme, which covers every cell
        protection = protection.setup()
    if secrets is None:
        if protection.has_secret:
            raise ConfigError(f"channel {channel.name!r}: {protection.name} needs a setup channel to share its "
                              "secrets")
        secrets = Secrets()
    prot = protection.counts(_context(protection, client, keys, ids, publics, channel, secrets, delta), pool=True)
    try:
        client.open_session(ids, combiner=protection.combiner("counts"), meta=session_meta(prot, channel),
                            params=params,
                            straggler_deadline_seconds=straggler_deadline)
    except AggregatorRejected as exc:
        if exc.code == "session_conflict":
            raise ConfigError(f"session {client.session!r} exists with other settings (another consortium, "
                              f"vocabulary or option): {exc.reason}") from None
        raise
    return CountsChannel(channel, client, prot, ids), secrets


def _join_with_secrets(client: AggregatorClient, channel: Channel, ids: Sequence[str], keys: PartyKeys,
                       publics: Sequence[bytes], launcher: str, protection: Protection, params: dict[str, Any],
                       timeout: float, key_bits: int, delta: float) -> Secrets:
    """The setup session: the launcher seals fresh secrets into its params; everyone opens theirs."""
    setup = protection.setup()
    if not protection.has_secret:
        prot = setup.counts(_context(setup, client, keys, ids, publics, channel, Secrets(), delta))
        try:
            client.open_session(ids, combiner=setup.combiner("counts"), meta=session_meta(prot, channel),
                                params=params)
        except AggregatorRejected as exc:
            if exc.code == "session_conflict":
                raise ConfigError(f"session {client.session!r} was opened with other settings (another "
                                  f"consortium, vocabulary or option): {exc.reason}") from None
            raise
        return Secrets()
    return sealed_session(client, ids, keys, publics, launcher=launcher, protection=protection, key_bits=key_bits,
                          params=params,
                          timeout=timeout, spec=lambda sec: (setup.combiner("counts"), session_meta(setup.counts(
                              _context(setup, client, keys, ids, publics, channel, sec, delta)), channel)))
