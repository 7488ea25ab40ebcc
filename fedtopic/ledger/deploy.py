"""Deploy a consortium on chain and bring it to a wanted state, idempotently.

The admin (the paper's CA) deploys the registry, admits every party with its account address and
X25519 public key, deploys each party's channel (owned by the party) and sets CP. Running
:func:`ensure_consortium` again with the same inputs sends no transaction; with a changed CP it sends
only the difference. Channel keys are the owners' business (:mod:`fedtopic.ledger.keys`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fedtopic.errors import ConfigError
from fedtopic.ledger.contracts import CHANNEL, REGISTRY
from fedtopic.ledger.rpc import Signer, contract_at, with_retries

ZERO_ADDRESS = "0x" + "00" * 20
DEFAULT_FUNDING_WEI = 100 * 10**18


@dataclass(frozen=True)
class PartySpec:
    """What the registry needs to know of a party."""

    party_id: str
    address: str
    x25519_public: bytes


@dataclass
class Deployment:
    """Where the consortium lives, and the actions the last call took (empty when nothing changed)."""

    registry: str
    channels: dict[str, str]
    actions: list[str] = field(default_factory=list)


def fund_accounts(faucet: Signer, addresses: Iterable[str], min_balance: int = DEFAULT_FUNDING_WEI) -> list[str]:
    """Top up to ``min_balance`` wei every address holding less than half of it; return the actions taken.

    (Half, so that a second run after some gas was spent changes nothing.)
    """
    actions = []
    for addr in addresses:
        balance = with_retries(lambda a=addr: faucet.w3.eth.get_balance(a), what="reading a balance")
        if balance < min_balance // 2:
            faucet.transact(to=addr, value=min_balance - balance, what=f"funding {addr}")
            actions.append(f"funded {addr}")
    return actions


def _check(parties: Sequence[PartySpec], readers: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    ids = [p.party_id for p in parties]
    problems = [f"party {i!r} is listed twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    problems += [f"party {p.party_id!r}: x25519 public key must be 32 bytes" for p in parties if len(p.x25519_public) != 32]
    known = set(ids)
    wanted: dict[str, set[str]] = {}
    for owner in ids:
        rs = set(readers.get(owner, ())) | {owner}  # CP_ii = 1 (paper Def. 4)
        problems += [f"CP: channel {owner!r} lists unknown reader {r!r}" for r in sorted(rs - known)]
        wanted[owner] = rs & known
    problems += [f"CP: unknown channel owner {o!r}" for o in sorted(set(readers) - known)]
    if problems:
        raise ConfigError("; ".join(problems))
    return wanted


def ensure_consortium(admin: Signer, parties: Sequence[PartySpec], readers: Mapping[str, Iterable[str]],
                      registry: str | None = None) -> Deployment:
    """Deploy (if ``registry`` is None) or update the registry, channels and CP to match the inputs.

    ``readers`` maps an owner's party id to the party ids that may read its channel (CP row).
    """
    wanted = _check(parties, readers)
    actions: list[str] = []
    if registry is None:
        registry = admin.deploy(REGISTRY)
        actions.append(f"deployed registry {registry}")
    reg = contract_at(admin.w3, REGISTRY, registry)
    fns = reg.functions
    address_of = {p.party_id: admin.w3.to_checksum_address(p.address) for p in parties}
    channels: dict[str, str] = {}
    for p in parties:
        addr = address_of[p.party_id]
        _, x_pub, channel, admitted, _ = with_retries(fns.member(addr).call, what="reading the registry")
        if not admitted:
            admin.transact(fns.admit(addr, p.party_id, p.x25519_public), what=f"admitting {p.party_id}")
            actions.append(f"admitted {p.party_id} ({addr})")
        elif bytes(x_pub) != p.x25519_public:
            admin.transact(fns.setX25519Public(addr, p.x25519_public), what=f"updating {p.party_id}'s key")
            actions.append(f"updated {p.party_id}'s X25519 public key")
        if channel == ZERO_ADDRESS:
            channel = admin.deploy(CHANNEL, addr, registry)
            admin.transact(fns.setChannel(addr, channel), what=f"recording {p.party_id}'s channel")
            actions.append(f"deployed channel of {p.party_id} at {channel}")
        channels[p.party_id] = admin.w3.to_checksum_address(channel)
    for owner, rs in wanted.items():
        o = address_of[owner]
        current = {admin.w3.to_checksum_address(a) for a in with_retries(fns.readersOf(o).call, what="reading CP")}
        target = {address_of[r] for r in rs}
        for pid in sorted(rs):
            if address_of[pid] not in current:
                admin.transact(fns.setAccess(o, address_of[pid], True), what=f"granting {pid} on {owner}")
                actions.append(f"granted {pid} read access to {owner}")
        id_of = {a: i for i, a in address_of.items()}
        for a in sorted(current - target):
            admin.transact(fns.setAccess(o, a, False), what=f"revoking {a} on {owner}")
            actions.append(f"revoked {id_of.get(a, a)} read access to {owner}")
    return Deployment(registry=registry, channels=channels, actions=actions)
