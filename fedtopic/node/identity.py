"""Who this node is: its private key file, checked against the consortium config."""

from __future__ import annotations

from pathlib import Path

from fedtopic.crypto.keys import PartyKeys, load_party_keys
from fedtopic.errors import ConfigError
from fedtopic.node.config import ConsortiumConfig
from fedtopic.node.consortium_init import key_file_path


def load_own_keys(cfg: ConsortiumConfig, config_path: Path, party_id: str, key_file: Path | None = None) -> PartyKeys:
    """``party_id``'s keys (default: keys/<party>.key.json beside the config); ConfigError if they are not the config's."""
    party_cfg = cfg.party(party_id)
    keys = load_party_keys(key_file or key_file_path(config_path.parent, party_id))
    if keys.party_id != party_id or keys.address != party_cfg.address or keys.x25519_public != party_cfg.x25519_public_bytes:
        raise ConfigError(f"key file belongs to {keys.party_id} ({keys.address}), not to party {party_id} ({party_cfg.address})")
    return keys
