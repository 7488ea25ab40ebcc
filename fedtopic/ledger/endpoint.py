"""From a consortium config to a live chain connection, the registry address and an admin key."""

from __future__ import annotations

from pathlib import Path

from web3 import Web3

from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.errors import ConfigError
from fedtopic.ledger.local_nodes import ANVIL_FAUCET_KEY, embedded_faucet_key
from fedtopic.ledger.rpc import connect

EMBEDDED_CHAIN_ID = 131277322940537  # eth-tester's, served by `fedtopic chain up`
ANVIL_CHAIN_ID = 31337


def chain_for(cfg: ConsortiumConfig, rpc: str | None = None) -> Web3:
    """Connect to ``rpc`` or the config's ``chain.rpc``; checks ``chain.chain_id`` if the config sets it."""
    url = rpc or cfg.chain.rpc
    if url == "embedded":
        raise ConfigError("chain.rpc is 'embedded', which lives inside one process: "
                          "start `fedtopic chain up` and pass its URL with --rpc (or set chain.rpc)")
    w3 = connect(url)
    if cfg.chain.chain_id is not None and w3.eth.chain_id != cfg.chain.chain_id:
        raise ConfigError(f"chain at {url} has chain id {w3.eth.chain_id}, the config says {cfg.chain.chain_id}")
    return w3


def registry_of(cfg: ConsortiumConfig) -> str:
    """The deployed registry's address; ConfigError if the consortium is not deployed yet."""
    if not cfg.chain.registry:
        raise ConfigError("chain.registry is not set: deploy first with `fedtopic consortium deploy`")
    return Web3.to_checksum_address(cfg.chain.registry)


def admin_key(w3: Web3, key_file: Path | None) -> bytes:
    """The admin's (CA's) private key: from ``key_file`` (hex), else a local dev chain's funded account."""
    if key_file is not None:
        try:
            text = key_file.read_text(encoding="utf-8").strip().removeprefix("0x")
            key = bytes.fromhex(text)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"admin key file {key_file}: cannot read a hex private key ({exc})") from None
        if len(key) != 32:
            raise ConfigError(f"admin key file {key_file}: a private key is 32 bytes, found {len(key)}")
        return key
    chain_id = w3.eth.chain_id
    if chain_id == EMBEDDED_CHAIN_ID:
        return embedded_faucet_key()
    if chain_id == ANVIL_CHAIN_ID:
        return ANVIL_FAUCET_KEY
    raise ConfigError(f"chain id {chain_id} is not a local dev chain: give the admin's key with --admin-key FILE")


def is_dev_chain(w3: Web3) -> bool:
    """True on `fedtopic chain up` and anvil, whose funded dev accounts may fund the parties."""
    return w3.eth.chain_id in (EMBEDDED_CHAIN_ID, ANVIL_CHAIN_ID)
