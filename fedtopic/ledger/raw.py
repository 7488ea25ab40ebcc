"""Bytes-level channel I/O: publish chunks, read heads, fetch and verify a round's chunks from logs.

No cryptography here: chunks are opaque bytes (the channel client seals them). What this layer
guarantees is integrity and completeness: the chunks returned for a round hash, chunk by chunk, to
the rolling hash the channel contract computed on chain, ``h_0 = keccak(c_0)``,
``h_i = keccak(h_{i-1} ‖ keccak(c_i))``, and for a channel's latest round the final ``h`` equals the
head in storage.

Reads make one ``eth_call`` (the registry's ``readableHeads``/``heads``) and ONE ``eth_getLogs`` over
the list of channel addresses and a block range taken from the heads — never from block 0
(eth-tester's getLogs from block 0 grows quadratically with the chain's length).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from eth_abi import decode
from eth_utils import keccak
from web3 import Web3

from fedtopic.ledger.contracts import CHANNEL, REGISTRY
from fedtopic.ledger.errors import MissingChunk, TamperedPayload, WrongRound
from fedtopic.ledger.limits import MAX_CHUNK_BYTES, publish_gas_limit
from fedtopic.ledger.rpc import Signer, batch_calls, contract_at, with_retries

PUBLISHED_TOPIC = "0x" + keccak(text="Published(uint64,uint16,uint16,uint32,bytes32,bytes)").hex()
_PUBLISHED_DATA = ["uint16", "uint16", "uint32", "bytes32", "bytes"]


@dataclass(frozen=True)
class ChannelHead:
    """A channel's storage head: its latest complete round and the block range its chunks are in."""

    owner: str
    channel: str
    published: bool
    round: int
    first_block: int
    last_block: int
    n_chunks: int
    hash: bytes
    epoch: int
    deploy_block: int


@dataclass(frozen=True)
class RawRound:
    """All chunks of one round of one channel, verified against the on-chain hash, in order."""

    owner: str
    channel: str
    round: int
    epoch: int
    chunks: tuple[bytes, ...]
    first_block: int
    last_block: int

    @property
    def nbytes(self) -> int:
        """Payload bytes on chain (calldata; the event log carries the same bytes again)."""
        return sum(len(c) for c in self.chunks)


@dataclass(frozen=True)
class PublishedLog:
    """One decoded ``Published`` event."""

    channel: str
    round: int
    chunk: int
    n_chunks: int
    epoch: int
    rolling_hash: bytes
    payload: bytes
    block: int
    log_index: int
    tx_hash: str


def rolling_hash(chunks: Iterable[bytes]) -> bytes:
    """The hash PartyChannel.publish computes over a round's chunks (see module docstring)."""
    h = b""
    for i, c in enumerate(chunks):
        h = keccak(c) if i == 0 else keccak(h + keccak(c))
    return h


def split_chunks(payload: bytes, max_chunk: int = MAX_CHUNK_BYTES) -> list[bytes]:
    """Split ``payload`` into ≤ ``max_chunk``-byte pieces (at least one, possibly empty)."""
    return [payload[i:i + max_chunk] for i in range(0, len(payload), max_chunk)] or [b""]


def publish_chunks(signer: Signer, channel: str, round: int, epoch: int, chunks: Sequence[bytes]) -> list[dict]:
    """Publish ``chunks`` (sealed with the key of ``epoch``) as round ``round`` of ``channel``, one transaction each."""
    if not 0 < len(chunks) < 2**16:
        raise WrongRound(f"channel {channel}: a round needs 1 to 65535 chunks, got {len(chunks)}")
    contract = contract_at(signer.w3, CHANNEL, channel)
    receipts = []
    for i, c in enumerate(chunks):
        call = contract.functions.publish(round, i, len(chunks), epoch, c)
        gas = publish_gas_limit(bytes.fromhex(call._encode_transaction_data()[2:]))
        receipts.append(signer.transact(call, gas=gas, what=f"publish round {round} chunk {i}"))
    return receipts


def transaction_senders(w3: Web3, tx_hashes: Sequence[str]) -> dict[str, str]:
    """tx hash → checksummed sender, read in JSON-RPC batches (``rpc.batch_calls``)."""
    unique = list(dict.fromkeys(tx_hashes))
    txs = batch_calls(w3, unique, what="reading the senders of published chunks", request=w3.eth.get_transaction)
    return {h: Web3.to_checksum_address(tx["from"]) for h, tx in zip(unique, txs)}


def _heads(rows: Sequence[Sequence]) -> list[ChannelHead]:
    return [ChannelHead(Web3.to_checksum_address(r[0]), Web3.to_checksum_address(r[1]), bool(r[2]), int(r[3]),
                        int(r[4]), int(r[5]), int(r[6]), bytes(r[7]), int(r[8]), int(r[9])) for r in rows]


def readable_heads(w3: Web3, registry: str, reader: str) -> list[ChannelHead]:
    """Heads of every channel CP lets ``reader`` read (one ``eth_call``)."""
    fn = contract_at(w3, REGISTRY, registry).functions.readableHeads(reader)
    return _heads(with_retries(fn.call, what="reading channel heads"))


def heads_of(w3: Web3, registry: str, owners: Sequence[str]) -> list[ChannelHead]:
    """Heads of the channels of ``owners`` (one ``eth_call``)."""
    fn = contract_at(w3, REGISTRY, registry).functions.heads(list(owners))
    return _heads(with_retries(fn.call, what="reading channel heads"))


def fetch_logs(w3: Web3, channels: Sequence[str], from_block: int, to_block: int,
               round: int | None = None) -> list[PublishedLog]:
    """ONE ``eth_getLogs``: the ``Published`` events of ``channels`` in [from_block, to_block]."""
    if not channels or to_block < from_block:
        return []
    topics: list = [PUBLISHED_TOPIC]
    if round is not None:
        topics.append("0x" + round.to_bytes(32, "big").hex())
    query = {"address": list(channels), "fromBlock": from_block, "toBlock": to_block, "topics": topics}
    logs = with_retries(lambda: w3.eth.get_logs(query), what="reading channel logs")  # type: ignore[arg-type]
    out = []
    for log in logs:
        chunk, n_chunks, epoch, rhash, payload = decode(_PUBLISHED_DATA, bytes(log["data"]))
        out.append(PublishedLog(Web3.to_checksum_address(log["address"]), int.from_bytes(bytes(log["topics"][1]), "big"),
                                chunk, n_chunks, epoch, bytes(rhash), bytes(payload), int(log["blockNumber"]),
                                int(log["logIndex"]), "0x" + bytes(log["transactionHash"]).hex()))
    out.sort(key=lambda e: (e.block, e.log_index))
    return out


def assemble_round(owner: str, channel: str, round: int, logs: Iterable[PublishedLog],
                   expected_hash: bytes | None = None) -> RawRound:
    """The last complete chunk sequence of ``round`` in ``logs`` (chunk 0 restarts a sequence), verified.

    Raises MissingChunk if no complete sequence is there, TamperedPayload if a chunk does not hash
    to the rolling hash the contract emitted, or the final hash differs from ``expected_hash``.
    """
    done: list[PublishedLog] | None = None
    current: list[PublishedLog] = []
    for e in logs:
        if e.channel != channel or e.round != round:
            continue
        if e.chunk == 0:
            current = [e]
        elif current and e.chunk == len(current) and e.n_chunks == current[0].n_chunks:
            current.append(e)
        else:
            current = []
        if current and len(current) == current[0].n_chunks:
            done, current = current, []
    if done is None:
        raise MissingChunk(f"channel {channel} (owner {owner}): round {round} has no complete set of chunks in the logs read")
    h = b""
    for i, e in enumerate(done):
        h = keccak(e.payload) if i == 0 else keccak(h + keccak(e.payload))
        if h != e.rolling_hash:
            raise TamperedPayload(f"channel {channel} (owner {owner}): round {round} chunk {i} does not match its on-chain hash")
    if expected_hash is not None and h != expected_hash:
        raise TamperedPayload(f"channel {channel} (owner {owner}): round {round} does not hash to the channel's stored head")
    return RawRound(owner, channel, round, done[0].epoch, tuple(e.payload for e in done), done[0].block, done[-1].block)


def read_latest_raw(w3: Web3, heads: Sequence[ChannelHead]) -> dict[str, RawRound]:
    """Latest complete round of every published channel in ``heads``, keyed by owner (one getLogs)."""
    live = [h for h in heads if h.published]
    if not live:
        return {}
    logs = fetch_logs(w3, [h.channel for h in live], min(h.first_block for h in live), max(h.last_block for h in live))
    return {h.owner: assemble_round(h.owner, h.channel, h.round, logs, expected_hash=h.hash) for h in live}


def read_round_raw(w3: Web3, heads: Sequence[ChannelHead], round: int, from_block: int | None = None) -> dict[str, RawRound]:
    """Round ``round`` of every channel in ``heads``, keyed by owner (one getLogs with the round as topic).

    Raises WrongRound if a channel has not reached ``round``. For channels already past it the range
    starts at ``from_block`` (a hint the caller may know) or the channel's deployment block.
    """
    behind = [f"{h.owner} is at {'no round' if not h.published else f'round {h.round}'}" for h in heads
              if not h.published or h.round < round]
    if behind:
        raise WrongRound(f"round {round} requested but " + ", ".join(behind))
    if not heads:
        return {}
    lo = min(h.first_block if h.round == round else (from_block if from_block is not None else h.deploy_block) for h in heads)
    hi = max(h.last_block if h.round == round else h.first_block - 1 for h in heads)
    logs = fetch_logs(w3, [h.channel for h in heads], lo, hi, round=round)
    return {h.owner: assemble_round(h.owner, h.channel, round, logs, expected_hash=h.hash if h.round == round else None)
            for h in heads}
