"""What a consortium's ledger holds, and whether it is sound: ``fedtopic ledger status`` and ``audit``.

Status reads the registry and the channel heads (channels, readers, key epochs, latest rounds,
payload bytes on chain). Audit re-reads every ``Published`` event of every channel and checks, per
round: the writer of every chunk transaction is the channel's owner; every chunk matches the rolling
hash the contract emitted; chunks come in order and completed rounds strictly increase; the last
complete round equals the channel's stored head. Logs are read in block windows from each channel's
deployment block, never from block 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from eth_utils import keccak
from web3 import Web3

from fedtopic.ledger import raw
from fedtopic.ledger.contracts import CHANNEL, REGISTRY
from fedtopic.ledger.rpc import contract_at, with_retries

LOG_WINDOW_BLOCKS = 500


@dataclass(frozen=True)
class ChannelStatus:
    """One channel as the registry and its head describe it."""

    party_id: str
    owner: str
    channel: str
    suspended: bool
    readers: list[str]
    key_epoch: int
    key_matches_cp: bool
    latest_round: int | None
    latest_block: int | None
    payload_bytes: int
    publish_transactions: int


@dataclass(frozen=True)
class AuditRow:
    """The audit verdict on one (channel, round)."""

    party_id: str
    round: int
    chunks: int
    payload_bytes: int
    first_block: int
    writer_ok: bool
    hash_ok: bool
    order_ok: bool
    complete: bool
    problem: str

    @property
    def ok(self) -> bool:
        return self.writer_ok and self.hash_ok and self.order_ok and self.complete

    def as_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}


def all_published(w3: Web3, channel: str, from_block: int, to_block: int) -> list[raw.PublishedLog]:
    """Every Published event of ``channel`` in [from_block, to_block], read in windows."""
    out: list[raw.PublishedLog] = []
    for lo in range(from_block, to_block + 1, LOG_WINDOW_BLOCKS):
        out += raw.fetch_logs(w3, [channel], lo, min(lo + LOG_WINDOW_BLOCKS - 1, to_block))
    return out


def _members(w3: Web3, registry: str) -> list[tuple[str, str, str, bool]]:
    reg = contract_at(w3, REGISTRY, registry).functions
    rows = []
    for a in with_retries(reg.members().call, what="reading the registry"):
        pid, _, channel, _, suspended = with_retries(reg.member(a).call, what="reading the registry")
        rows.append((pid, Web3.to_checksum_address(a), Web3.to_checksum_address(channel), bool(suspended)))
    return rows


def ledger_status(w3: Web3, registry: str) -> list[ChannelStatus]:
    """Status of every member's channel."""
    reg = contract_at(w3, REGISTRY, registry).functions
    members = _members(w3, registry)
    name = {a: pid for pid, a, _, _ in members}
    latest = with_retries(lambda: w3.eth.block_number, what="reading the block number")
    heads = {h.owner: h for h in raw.heads_of(w3, registry, [a for _, a, _, _ in members])}
    out = []
    for pid, owner, channel, suspended in members:
        h = heads[owner]
        readers = [Web3.to_checksum_address(r) for r in with_retries(reg.readersOf(owner).call, what="reading CP")]
        key_current = False
        logs: list[raw.PublishedLog] = []
        if int(channel, 16):
            chan = contract_at(w3, CHANNEL, channel).functions
            key_version = with_retries(chan.keyCpVersion().call, what="reading the key epoch")
            key_current = h.epoch > 0 and key_version == with_retries(reg.cpVersion(owner).call, what="reading CP")
            logs = all_published(w3, channel, h.deploy_block, latest)
        out.append(ChannelStatus(pid, owner, channel, suspended, [name.get(r, r) for r in readers], h.epoch,
                                 key_current, h.round if h.published else None,
                                 h.last_block if h.published else None, sum(len(e.payload) for e in logs), len(logs)))
    return out


def audit_channel(w3: Web3, party_id: str, owner: str, head: raw.ChannelHead, to_block: int) -> list[AuditRow]:
    """Audit every round ever published on one channel."""
    logs = all_published(w3, head.channel, head.deploy_block, to_block)
    senders = {e.tx_hash: Web3.to_checksum_address(with_retries(lambda h=e.tx_hash: w3.eth.get_transaction(h)["from"],
                                                                 what="reading a transaction")) for e in logs}
    rows: list[AuditRow] = []
    run: list[raw.PublishedLog] = []
    last_complete = -1

    def close(seq: list[raw.PublishedLog], complete: bool) -> None:
        nonlocal last_complete
        h, hash_ok = b"", True
        for i, e in enumerate(seq):
            h = keccak(e.payload) if i == 0 else keccak(h + keccak(e.payload))
            hash_ok &= h == e.rolling_hash
        order_ok = all(e.chunk == i and e.n_chunks == seq[0].n_chunks for i, e in enumerate(seq))
        if complete:
            order_ok &= seq[0].round > last_complete
            last_complete = max(last_complete, seq[0].round)
        writer_ok = all(senders[e.tx_hash] == owner for e in seq)
        problems = [p for p, bad in (("writer is not the owner", not writer_ok), ("hash mismatch", not hash_ok),
                                     ("out of order", not order_ok), ("incomplete (abandoned) round", not complete)) if bad]
        rows.append(AuditRow(party_id, seq[0].round, len(seq), sum(len(e.payload) for e in seq), seq[0].block,
                             writer_ok, hash_ok, order_ok, complete, "; ".join(problems)))

    for e in logs:
        if e.chunk == 0 and run:
            close(run, False)
            run = []
        run.append(e)
        if len(run) == run[0].n_chunks:
            close(run, True)
            run = []
    if run:
        close(run, False)
    complete = [r for r in rows if r.complete]
    last_hash = next((e.rolling_hash for e in reversed(logs) if e.chunk + 1 == e.n_chunks), b"")
    if head.published and (not complete or complete[-1].round != head.round or last_hash != head.hash):
        rows.append(AuditRow(party_id, head.round, head.n_chunks, 0, head.first_block, True, False, False, False,
                             "stored head does not match the last complete round in the logs"))
    return rows


def ledger_audit(w3: Web3, registry: str) -> list[AuditRow]:
    """Audit every channel of the consortium."""
    members = _members(w3, registry)
    latest = with_retries(lambda: w3.eth.block_number, what="reading the block number")
    heads = {h.owner: h for h in raw.heads_of(w3, registry, [a for _, a, _, _ in members])}
    rows: list[AuditRow] = []
    for pid, owner, channel, _ in members:
        if int(channel, 16):
            rows += audit_channel(w3, pid, owner, heads[owner], latest)
    return rows


def readers_outside_cp(w3: Web3, registry: str, cp: Mapping[str, Iterable[str]]) -> list[str]:
    """One line per channel reader on chain that the consortium.toml's CP does not list (a reader someone added
    behind the consortium's back), and per member the registry has that the config does not know."""
    reg = contract_at(w3, REGISTRY, registry).functions
    members = _members(w3, registry)
    name = {a: pid for pid, a, _, _ in members}
    problems = []
    for pid, owner, _, _ in members:
        if pid not in cp:
            problems.append(f"member {pid} ({owner}) is on chain but not in consortium.toml")
            continue
        allowed = set(cp[pid]) | {pid}
        readers = [Web3.to_checksum_address(r) for r in with_retries(reg.readersOf(owner).call, what="reading CP")]
        for r in readers:
            if name.get(r, r) not in allowed:
                problems.append(f"{name.get(r, r)} can read {pid}'s channel on chain, but CP does not allow it")
    return problems
