"""A party's channel client: publish its counts, read the counts of every channel CP lets it read.

Implements ``fedtopic.node.transport.ChannelTransport`` over a chain. Publishing (paper Alg. 3,
line 17): encode N_p (sparse, compressed) → split into chunks that fit real nodes' limits → seal
each chunk with the channel key of the current epoch, bound to channel, round and chunk position →
one ``publish`` transaction per chunk. Reading (Alg. 3, line 5): one ``eth_call`` for the heads of
the readable channels, ONE ``eth_getLogs`` for the chunks of the rounds not read yet → verify each
round's hash against the chain → unwrap the channel key of the epoch (cached) → open → decode.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from web3 import Web3

from fedtopic.algorithms.asynchronous import ChannelSnapshot
from fedtopic.crypto.card import attach_card, check_card, detach_card
from fedtopic.crypto.codec import decode_counts, encode_counts
from fedtopic.crypto.envelope import SEAL_OVERHEAD_BYTES, open_sealed, seal
from fedtopic.crypto.keys import PartyKeys
from fedtopic.errors import TrainingError
from fedtopic.ledger import raw
from fedtopic.ledger.contracts import CHANNEL, REGISTRY
from fedtopic.ledger.errors import NotAReader, TransactionRejected
from fedtopic.ledger.keys import channel_label, ensure_channel_key, fetch_channel_key
from fedtopic.ledger.limits import MAX_CHUNK_BYTES
from fedtopic.ledger.rpc import Signer, contract_at, with_retries
from fedtopic.ledger.runs import RUN_SPAN, run_base, run_of


@dataclass(frozen=True)
class Published:
    """What one publish put on chain."""

    round: int
    n_chunks: int
    payload_bytes: int
    gas_used: int
    first_block: int
    last_block: int


@dataclass(frozen=True)
class Payload:
    """One channel's decrypted payload of one round."""

    party_id: str
    owner: str
    round: int
    epoch: int
    plaintext: bytes
    chain_bytes: int


class ChainChannel:
    """One party's view of the channels on a chain: write its own, read those CP (and its keys) allow."""

    def __init__(self, w3: Web3, registry: str, keys: PartyKeys, *, shape: tuple[int, int] | None = None,
                 max_chunk: int = MAX_CHUNK_BYTES, card: bytes = b"", run: int = 1) -> None:
        """``card``: this party's session card (``crypto/card.py``), put in front of every count publication and
        compared with every count publication read, before its counts are decoded. ``run``: the consortium's run
        this party takes part in (``ledger/runs.py``): rounds given and returned here are the run's, 0, 1, …;
        on chain they are offset by the run's base, and other runs' rounds are not read."""
        self.w3 = w3
        self.card = card
        self.run, self.base = run, run_base(run)
        self.registry = Web3.to_checksum_address(registry)
        self.keys = keys
        self.party_id = keys.party_id
        self.signer = Signer(w3, keys.eth_private_key)
        self.address = self.signer.address
        self.shape = shape
        self.max_plain_chunk = max_chunk - SEAL_OVERHEAD_BYTES
        self.chain_id: int = with_retries(lambda: w3.eth.chain_id, what="reading the chain id")
        self._reg = contract_at(w3, REGISTRY, self.registry).functions
        _, _, channel, admitted, _ = with_retries(self._reg.member(self.address).call, what="reading the registry")
        if not admitted:
            raise NotAReader(f"party {self.party_id} ({self.address}) is not a member of registry {self.registry}")
        self.channel = Web3.to_checksum_address(channel)
        self._names: dict[str, str] = {}
        self._keys: dict[tuple[str, int], bytes] = {}
        self._latest: dict[str, Payload] = {}
        self._received = 0
        self._own_epoch: int | None = None
        self.last_published: Published | None = None  # the latest count publication (its blocks and gas)
        self.clock = None  # real time

    # ---- writing -------------------------------------------------------------------------
    def publish_bytes(self, round: int, plaintext: bytes) -> Published:
        """Seal and publish ``plaintext`` as round ``round`` of our channel.

        The contract refuses a key that is not the current epoch's or was wrapped for an older CP row;
        then the key is brought up to date (rotated if CP changed) and the publish retried once.
        """
        for attempt in (1, 2):
            if self._own_epoch is None:
                self._sync_own_key()
            assert self._own_epoch is not None
            key = self._key(self.channel, self._own_epoch)
            label = channel_label(self.chain_id, self.channel)
            pieces = raw.split_chunks(plaintext, self.max_plain_chunk)
            n = len(pieces)
            at = self.base + round
            chunks = [seal(key, p, channel=label, round=at, chunk=i, n_chunks=n) for i, p in enumerate(pieces)]
            try:
                receipts = raw.publish_chunks(self.signer, self.channel, at, self._own_epoch, chunks)
            except TransactionRejected as exc:
                if exc.reason not in ("StaleKeyEpoch", "KeyBehindCP") or attempt == 2:
                    raise
                self._own_epoch = None
                continue
            return Published(round, n, sum(len(c) for c in chunks), sum(r["gasUsed"] for r in receipts),
                             receipts[0]["blockNumber"], receipts[-1]["blockNumber"])
        raise AssertionError("unreachable")  # pragma: no cover

    def _sync_own_key(self) -> None:
        ensure_channel_key(self.signer, self.registry)
        self._own_epoch = with_retries(contract_at(self.w3, CHANNEL, self.channel).functions.keyEpoch().call,
                                       what="reading the key epoch")

    def publish(self, round: int, n_wk: np.ndarray) -> int:
        """Publish N_p (int32[V, K]) for ``round``; returns the payload bytes put on chain."""
        self.last_published = self.publish_bytes(round, attach_card(self.card, encode_counts(n_wk)))
        return self.last_published.payload_bytes

    def publication(self) -> dict[str, Any]:
        """The history's ``extra.ledger`` of the latest count publication (first and last block, gas, chunks,
        payload bytes); {} before the first."""
        p = self.last_published
        if p is None:
            return {}
        return {"ledger": {"block": p.first_block, "last_block": p.last_block, "gas": p.gas_used,
                           "chunks": p.n_chunks, "bytes": p.payload_bytes}}

    # ---- reading -------------------------------------------------------------------------
    def readable_heads(self) -> list[raw.ChannelHead]:
        """Heads of the channels CP lets us read (ours included)."""
        return raw.readable_heads(self.w3, self.registry, self.address)

    def _in_run(self, head: raw.ChannelHead) -> bool:
        """Whether ``head``'s latest round is in this party's run; TrainingError if it is in a later one."""
        if not head.published or head.round < self.base:
            return False
        if head.round >= self.base + RUN_SPAN:
            raise TrainingError(f"{self.party_id}: {self._party_id(head.owner)} publishes run {run_of(head.round)} "
                                f"while this party is in run {self.run}: start it again with `node run --fresh`")
        return True

    def read_latest_bytes(self, *, include_own: bool = False) -> dict[str, Payload]:
        """Latest payload of every readable channel that has published in this run, by party id (one getLogs for
        new rounds); rounds are the run's."""
        heads = [h for h in self.readable_heads() if (include_own or h.owner != self.address) and self._in_run(h)]
        stale = [h for h in heads if (c := self._latest.get(h.owner)) is None or c.round != h.round]
        for owner, rr in raw.read_latest_raw(self.w3, stale).items():
            self._latest[owner] = self._open(rr)
            self._received += rr.nbytes
        return {self._latest[h.owner].party_id: self._in_run_rounds(self._latest[h.owner]) for h in heads}

    def _in_run_rounds(self, p: Payload) -> Payload:
        return replace(p, round=p.round - self.base)

    def read_round_bytes(self, round: int, *, from_block: int | None = None, include_own: bool = False) -> dict[str, Payload]:
        """Payload of the run's round ``round`` of every readable channel (WrongRound if one has not reached it)."""
        heads = [h for h in self.readable_heads() if include_own or h.owner != self.address]
        out = {}
        for rr in raw.read_round_raw(self.w3, heads, self.base + round, from_block).values():
            p = self._open(rr)
            self._received += rr.nbytes
            out[p.party_id] = self._in_run_rounds(p)
        return out

    def read_channel_bytes(self, owner: str) -> Payload:
        """Latest payload of ``owner``'s channel whether or not CP lists us (NotAReader if we hold no key); its
        round is the chain's."""
        (head,) = raw.heads_of(self.w3, self.registry, [Web3.to_checksum_address(owner)])
        rr = raw.read_latest_raw(self.w3, [head])[head.owner]
        return self._open(rr)

    def _counts(self, p: Payload) -> ChannelSnapshot:
        card, body = detach_card(p.plaintext)
        check_card(self.party_id, self.card, p.party_id, card)
        return ChannelSnapshot(p.party_id, p.round, decode_counts(body, expected_shape=self.shape))

    def read_latest(self) -> list[ChannelSnapshot]:
        """Latest counts of every readable channel other than ours that has published (SessionMismatch if a
        channel's card differs from ours)."""
        return [self._counts(p) for p in self.read_latest_bytes().values()]

    def read_round(self, round: int, *, from_block: int | None = None) -> list[ChannelSnapshot]:
        """Counts of round ``round`` of every readable channel other than ours."""
        return [self._counts(p) for p in self.read_round_bytes(round, from_block=from_block).values()]

    def bytes_received(self) -> int:
        """Payload bytes read from the chain so far."""
        return self._received

    def latest_round(self, owner: str) -> int | None:
        """The latest complete round of this run on ``owner``'s channel (a party id), None if it has not published
        in this run."""
        for head in self.readable_heads():
            if self._party_id(head.owner) == owner:
                return head.round - self.base if self._in_run(head) else None
        raise NotAReader(f"party {self.party_id} may not read channel {owner}")

    def latest_chain_round(self, owner: str) -> int | None:
        """The latest complete round on ``owner``'s channel whatever its run (None: it never published)."""
        for head in self.readable_heads():
            if self._party_id(head.owner) == owner:
                return head.round if head.published else None
        raise NotAReader(f"party {self.party_id} may not read channel {owner}")

    # ---- helpers -------------------------------------------------------------------------
    def _key(self, channel: str, epoch: int) -> bytes:
        if (channel, epoch) not in self._keys:
            self._keys[(channel, epoch)] = fetch_channel_key(self.w3, self.chain_id, channel, epoch, self.address,
                                                             self.keys.x25519_private_key)
        return self._keys[(channel, epoch)]

    def _party_id(self, owner: str) -> str:
        if owner not in self._names:
            self._names[owner] = with_retries(self._reg.member(owner).call, what="reading the registry")[0]
        return self._names[owner]

    def _open(self, rr: raw.RawRound) -> Payload:
        if rr.epoch == 0:
            raise NotAReader(f"channel {rr.channel}: round {rr.round} was published before any key epoch")
        key = self._key(rr.channel, rr.epoch)
        label = channel_label(self.chain_id, rr.channel)
        n = len(rr.chunks)
        plain = b"".join(open_sealed(key, c, channel=label, round=rr.round, chunk=i, n_chunks=n)
                         for i, c in enumerate(rr.chunks))
        return Payload(self._party_id(rr.owner), rr.owner, rr.round, rr.epoch, plain, rr.nbytes)
