"""What a consortium's ledger holds, and whether it is sound: ``fedtopic ledger status`` and ``audit``.

Status reads the registry and the channel heads (channels, readers, key epochs, latest rounds,
payload bytes on chain). Audit re-reads every ``Published`` event of every channel and checks, per
round: the writer of every chunk transaction is the channel's owner; every chunk matches the rolling
hash the contract emitted; chunks come in order and completed rounds strictly increase; the last
complete round equals the channel's stored head. Logs are read in block windows from each channel's
deployment block, never from block 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass

from eth_utils import keccak
from web3 import Web3

from fedtopic.ledger import raw
from fedtopic.ledger.contracts import CHANNEL, REGISTRY
from fedtopic.ledger.rpc import batch_calls, contract_at, with_retries

LOG_WINDOW_BLOCKS = 500
TRAILING = "incomplete round (chunks still missing at the chain's tip)"


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
    payload_bytes: int  # bytes of Published event data on chain (-1: not known on this node)
    publish_transactions: int  # Published events (-1: not known on this node)


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
    """(party id, owner, channel, suspended) of every member, in two round trips."""
    reg = contract_at(w3, REGISTRY, registry).functions
    owners = with_retries(reg.members().call, what="reading the registry")
    rows = batch_calls(w3, [reg.member(a) for a in owners], what="reading the registry")
    return [(pid, Web3.to_checksum_address(a), Web3.to_checksum_address(channel), bool(suspended))
            for a, (pid, _, channel, _, suspended) in zip(owners, rows)]


def _log_stats(w3: Web3, channels: list[str]) -> dict[str, dict[str, int]] | None:
    """Per channel, its Published events and their bytes, from `chain up`'s log index (None on other nodes)."""
    try:
        answer = w3.provider.make_request("fedtopic_logStats", [channels, raw.PUBLISHED_TOPIC])  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - a node without the method may raise instead of answering an error
        return None
    if not isinstance(answer, dict) or "result" not in answer:
        return None
    return {Web3.to_checksum_address(a): v for a, v in answer["result"].items()}


def ledger_status(w3: Web3, registry: str) -> list[ChannelStatus]:
    """Status of every member's channel, from the registry, the heads and (on `chain up`) the log index: it reads
    no payload, so it costs the same at any chain length. On other nodes the history columns are -1."""
    reg = contract_at(w3, REGISTRY, registry).functions
    members = _members(w3, registry)
    name = {a: pid for pid, a, _, _ in members}
    heads = {h.owner: h for h in raw.heads_of(w3, registry, [a for _, a, _, _ in members])}
    stats = _log_stats(w3, [c for _, _, c, _ in members if int(c, 16)]) or {}
    with_channel = [(owner, channel) for _, owner, channel, _ in members if int(channel, 16)]
    calls = [reg.readersOf(owner) for _, owner, _, _ in members]
    calls += [contract_at(w3, CHANNEL, channel).functions.keyCpVersion() for _, channel in with_channel]
    calls += [reg.cpVersion(owner) for owner, _ in with_channel]
    answers = batch_calls(w3, calls, what="reading CP and key epochs")
    readers_of = dict(zip([owner for _, owner, _, _ in members], answers[:len(members)]))
    n = len(with_channel)
    key_versions = dict(zip([o for o, _ in with_channel], answers[len(members):len(members) + n]))
    cp_versions = dict(zip([o for o, _ in with_channel], answers[len(members) + n:]))
    out = []
    for pid, owner, channel, suspended in members:
        h = heads[owner]
        readers = [Web3.to_checksum_address(r) for r in readers_of[owner]]
        key_current = owner in key_versions and h.epoch > 0 and key_versions[owner] == cp_versions[owner]
        s = stats.get(channel, {"logs": -1, "data_bytes": -1})
        out.append(ChannelStatus(pid, owner, channel, suspended, [name.get(r, r) for r in readers], h.epoch,
                                 key_current, h.round if h.published else None,
                                 h.last_block if h.published else None, s["data_bytes"], s["logs"]))
    return out


@dataclass
class ChannelProgress:
    """How far one channel has been verified: through ``block``, its last complete round, and the round whose
    chunks were still coming in (its next chunk index and rolling hash so far), so a later audit goes on from
    there without reading the earlier logs again."""

    block: int = -1
    last_complete: int = -1
    run_round: int | None = None
    run_next: int = 0
    run_chunks: int = 0
    run_hash: str = ""
    run_first_block: int = 0
    run_bytes: int = 0
    run_ok: bool = True
    run_hash_ok: bool = True
    run_order_ok: bool = True
    last_hash: str = ""
    rounds_verified: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def audit_channel(w3: Web3, party_id: str, owner: str, head: raw.ChannelHead, to_block: int,
                  progress: ChannelProgress | None = None) -> tuple[list[AuditRow], ChannelProgress]:
    """Audit the rounds published on one channel after ``progress`` (from its deployment when None); returns the
    rows of the rounds completed (or abandoned) in this stretch and the progress to resume from."""
    prog = ChannelProgress(**(progress.as_dict() if progress is not None else {}))
    from_block = max(head.deploy_block, prog.block + 1)
    logs = all_published(w3, head.channel, from_block, to_block)
    senders = raw.transaction_senders(w3, [e.tx_hash for e in logs])
    rows: list[AuditRow] = []

    def close(complete: bool) -> None:
        order_ok = prog.run_order_ok
        if complete:
            order_ok &= prog.run_round > prog.last_complete
            prog.last_complete = max(prog.last_complete, prog.run_round)
            prog.last_hash = prog.run_hash
        problems = [p for p, bad in (("writer is not the owner", not prog.run_ok), ("hash mismatch", not prog.run_hash_ok),
                                     ("out of order", not order_ok), ("incomplete (abandoned) round", not complete)) if bad]
        rows.append(AuditRow(party_id, prog.run_round, prog.run_next, prog.run_bytes, prog.run_first_block, prog.run_ok,
                             prog.run_hash_ok, order_ok, complete, "; ".join(problems)))
        prog.rounds_verified += 1
        prog.run_round, prog.run_next, prog.run_hash, prog.run_bytes = None, 0, "", 0
        prog.run_ok = prog.run_hash_ok = prog.run_order_ok = True

    for e in logs:
        if e.chunk == 0 and prog.run_round is not None:
            close(False)
        if prog.run_round is None:
            prog.run_round, prog.run_chunks, prog.run_first_block = e.round, e.n_chunks, e.block
            prog.run_order_ok = e.chunk == 0
            h = keccak(e.payload)
        else:
            h = keccak(bytes.fromhex(prog.run_hash) + keccak(e.payload))
            prog.run_order_ok &= e.chunk == prog.run_next and e.n_chunks == prog.run_chunks and e.round == prog.run_round
        prog.run_hash_ok &= h == e.rolling_hash
        prog.run_ok &= senders[e.tx_hash] == owner
        prog.run_hash, prog.run_next, prog.run_bytes = h.hex(), prog.run_next + 1, prog.run_bytes + len(e.payload)
        if prog.run_next == prog.run_chunks:
            close(True)
    prog.block = to_block
    if prog.run_round is not None:  # reported, not kept: the next audit sees whether it completes
        rows.append(AuditRow(party_id, prog.run_round, prog.run_next, prog.run_bytes, prog.run_first_block,
                             prog.run_ok, prog.run_hash_ok, prog.run_order_ok, False, TRAILING))
    if head.published and head.last_block <= to_block and (prog.last_complete != head.round
                                                            or prog.last_hash != head.hash.hex()):
        rows.append(AuditRow(party_id, head.round, head.n_chunks, 0, head.first_block, True, False, False, False,
                             "stored head does not match the last complete round in the logs"))
    return rows, prog


def ledger_audit(w3: Web3, registry: str, state: dict[str, dict] | None = None,
                 on_channel: Callable[[str, int, int], None] | None = None) -> tuple[list[AuditRow], dict[str, dict]]:
    """Audit every channel of the consortium, going on from ``state`` (per channel owner, as returned) when given;
    returns the new rows and the state to keep. ``on_channel(party, from_block, to_block)`` reports progress."""
    members = _members(w3, registry)
    latest = with_retries(lambda: w3.eth.block_number, what="reading the block number")
    heads = {h.owner: h for h in raw.heads_of(w3, registry, [a for _, a, _, _ in members])}
    rows: list[AuditRow] = []
    out: dict[str, dict] = {}
    for pid, owner, channel, _ in members:
        if not int(channel, 16):
            continue
        before = (state or {}).get(owner)
        prog = ChannelProgress(**before) if before else None
        if on_channel is not None:
            on_channel(pid, max(heads[owner].deploy_block, (prog.block + 1) if prog else 0), latest)
        got, prog = audit_channel(w3, pid, owner, heads[owner], latest, prog)
        rows += got
        out[owner] = prog.as_dict()
    return rows, out


def readers_outside_cp(w3: Web3, registry: str, cp: Mapping[str, Iterable[str]]) -> list[str]:
    """One line per channel reader on chain that the consortium.toml's CP does not list (a reader someone added
    behind the consortium's back), and per member the registry has that the config does not know."""
    reg = contract_at(w3, REGISTRY, registry).functions
    members = _members(w3, registry)
    name = {a: pid for pid, a, _, _ in members}
    problems = []
    known = [(pid, owner) for pid, owner, _, _ in members if pid in cp]
    readers_of = dict(zip(known, batch_calls(w3, [reg.readersOf(owner) for _, owner in known], what="reading CP")))
    for pid, owner, _, _ in members:
        if pid not in cp:
            problems.append(f"member {pid} ({owner}) is on chain but not in consortium.toml")
            continue
        allowed = set(cp[pid]) | {pid}
        readers = [Web3.to_checksum_address(r) for r in readers_of[(pid, owner)]]
        for r in readers:
            if name.get(r, r) not in allowed:
                problems.append(f"{name.get(r, r)} can read {pid}'s channel on chain, but CP does not allow it")
    return problems
