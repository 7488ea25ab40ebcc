"""Bring a chain in line with a consortium.toml: registry, channels, CP and channel keys.

``deploy_consortium`` is what ``fedtopic consortium deploy|grant|revoke`` run. It is idempotent:
a second run with the same config sends no transaction. Channel keys are rotated by their owners,
so it can only rotate the keys of parties whose key files sit beside the config (keys/<id>.key.json,
as ``consortium init`` writes them); any other party's key is rotated when that party next publishes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from web3 import Web3

from fedtopic.consortium.config import ConsortiumConfig, save_consortium
from fedtopic.consortium.init import key_file_path
from fedtopic.crypto.keys import load_party_keys
from fedtopic.errors import ConfigError
from fedtopic.ledger.deploy import PartySpec, ensure_consortium, fund_accounts
from fedtopic.ledger.keys import ensure_channel_key
from fedtopic.ledger.rpc import Signer


@dataclass(frozen=True)
class DeployResult:
    """Where the consortium lives and what this run changed (empty ``actions``: nothing)."""

    registry: str
    channels: dict[str, str]
    actions: list[str]
    keys_pending: list[str]


def deploy_consortium(cfg: ConsortiumConfig, config_path: Path, w3: Web3, admin_key: bytes, rpc_url: str,
                      faucet: bytes | None = None) -> DeployResult:
    """Deploy or update the consortium described by ``cfg`` and record registry and endpoint in the config file.

    ``faucet`` (a funded key: `chain up`'s DATA/faucet.key, a dev chain's well-known account) tops up the admin's
    and the parties' gas; it never administers. Without one, everyone must already hold gas (else one line)."""
    registry = cfg.chain.registry
    if registry is not None and not w3.eth.get_code(Web3.to_checksum_address(registry)):
        raise ConfigError(f"chain.registry {registry} has no contract on the chain at {rpc_url} (wrong chain?)")
    admin = Signer(w3, admin_key)
    specs = [PartySpec(p.id, p.address, p.x25519_public_bytes) for p in cfg.parties]
    actions = []
    payees = [admin.address] + [p.address for p in cfg.parties]
    if faucet is not None:
        payer = Signer(w3, faucet)
        actions = fund_accounts(payer, [a for a in payees if a != payer.address])
    else:
        broke = [a for a in payees if w3.eth.get_balance(Web3.to_checksum_address(a)) == 0]
        if broke:
            raise ConfigError(f"{len(broke)} of the admin and parties hold no gas ({', '.join(broke[:3])}"
                              f"{', …' if len(broke) > 3 else ''}): give --faucet-key FILE (`chain up` writes "
                              "DATA/faucet.key) or fund them on your chain")
    dep = ensure_consortium(admin, specs, {o: list(cfg.readers_of(o)) for o in cfg.party_ids}, registry)
    actions += dep.actions
    pending = []
    for p in cfg.parties:
        path = key_file_path(config_path.parent, p.id)
        if not path.exists():
            pending.append(p.id)
            continue
        epoch = ensure_channel_key(Signer(w3, load_party_keys(path).eth_private_key), dep.registry)
        if epoch is not None:
            actions.append(f"{p.id} wrapped its channel key for its readers (key epoch {epoch})")
    if cfg.chain.registry != dep.registry or cfg.chain.rpc != rpc_url:
        chain = cfg.chain.model_copy(update={"registry": dep.registry, "rpc": rpc_url})
        save_consortium(cfg.model_copy(update={"chain": chain}), config_path)
        actions.append(f"recorded registry {dep.registry} and rpc {rpc_url} in {config_path}")
    return DeployResult(dep.registry, dep.channels, actions, pending)


def change_cp(cfg: ConsortiumConfig, owner: str, reader: str, allow: bool) -> ConsortiumConfig:
    """``cfg`` with ``reader`` added to (or removed from) the readers of ``owner``'s channel."""
    cfg.party(owner)
    cfg.party(reader)
    if owner == reader:
        raise ConfigError(f"a party always reads its own channel ({owner}); CP_ii = 1 cannot change")
    readers = [r for r in cfg.cp.get(owner, []) if r != reader] + ([reader] if allow else [])
    return cfg.model_copy(update={"cp": {**cfg.cp, owner: readers}})
