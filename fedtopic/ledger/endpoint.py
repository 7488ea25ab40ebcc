"""From a consortium config to a live chain connection, the registry address and an admin key."""

from __future__ import annotations

from pathlib import Path

from web3 import Web3

from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.crypto.keys import read_hex_key
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


def well_known_addresses() -> frozenset[str]:
    """Addresses whose private keys are published: eth-tester's default accounts (keys 0x…01 to 0x…0a, what
    `fedtopic chain up` funds) and the first accounts of the Hardhat/Anvil/Foundry test mnemonic."""
    from eth_account import Account
    from eth_tester.backends.pyevm.main import get_default_account_keys

    from fedtopic.network.settings import DEV_ADDRESSES

    tester = {Account.from_key(k.to_bytes()).address.lower() for k in get_default_account_keys()}
    return frozenset(tester | set(DEV_ADDRESSES) | {Account.from_key(ANVIL_FAUCET_KEY).address.lower()})


def faucet_key(w3: Web3, key_file: Path | None) -> bytes | None:
    """The key that pays the admin's and the parties' gas: ``key_file`` (`chain up` without --dev writes
    DATA/faucet.key), else a local dev chain's well-known funded account if it still has funds, else None."""
    if key_file is not None:
        return read_hex_key(key_file, "faucet key file")
    if not is_dev_chain(w3):
        return None
    from eth_account import Account

    key = dev_faucet_key(w3)
    return key if w3.eth.get_balance(Account.from_key(key).address) > 0 else None


def admin_key(w3: Web3, key_file: Path | None, config_path: Path | None = None, *, dev: bool = False) -> bytes:
    """The registry admin's (CA's) private key: ``key_file``, else keys/admin.key beside the config (written by
    `consortium init`); only with ``dev`` (a throwaway local chain) a dev chain's well-known funded key.

    A key whose account is well known (anyone can sign for it) is refused unless ``dev``.
    """
    from eth_account import Account

    from fedtopic.consortium.init import admin_key_path

    default = None if config_path is None else admin_key_path(config_path.parent)
    if key_file is not None:
        key = read_hex_key(key_file, "admin key file")
    elif default is not None and default.exists():
        key = read_hex_key(default, "admin key file")
    elif dev and w3.eth.chain_id in (EMBEDDED_CHAIN_ID, ANVIL_CHAIN_ID):
        return dev_faucet_key(w3)
    else:
        where = f" (looked for {default})" if default is not None else ""
        raise ConfigError(f"no admin key{where}: `consortium init` writes keys/admin.key; give --admin-key FILE, "
                          "or --dev on a throwaway local chain")
    if not dev and Account.from_key(key).address.lower() in well_known_addresses():
        raise ConfigError("the admin key is a well-known development key (anyone can sign with it); "
                          "use the key `consortium init` wrote, or pass --dev for a throwaway chain")
    return key


def dev_faucet_key(w3: Web3) -> bytes:
    """A local dev chain's funded, well-known account: it may pay for gas, never control a consortium."""
    chain_id = w3.eth.chain_id
    if chain_id == EMBEDDED_CHAIN_ID:
        return embedded_faucet_key()
    if chain_id == ANVIL_CHAIN_ID:
        return ANVIL_FAUCET_KEY
    raise ConfigError(f"chain id {chain_id} is not a local dev chain: it has no faucet")


def is_dev_chain(w3: Web3) -> bool:
    """True on `fedtopic chain up` and anvil, whose funded dev accounts may fund the parties."""
    return w3.eth.chain_id in (EMBEDDED_CHAIN_ID, ANVIL_CHAIN_ID)
