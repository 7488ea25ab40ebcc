"""What every node process does before its algorithm runs: who it is (keys checked against the consortium
config), its documents, its untrained party and its state folder (``prepare_party``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedtopic.algorithms.base import Mode
from fedtopic.algorithms.capabilities import AsyncFederated, SyncFederated, capability
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.consortium.init import key_file_path
from fedtopic.crypto.keys import PartyKeys, load_party_keys
from fedtopic.errors import ConfigError
from fedtopic.node.party_data import PartyData, load_party_data
from fedtopic.node.session_params import session_params
from fedtopic.node.state_file import write_text_atomic
from fedtopic.node.state_folder import claim_state, set_aside
from fedtopic.runs.process import PROCESS_FILE, process_mark


@dataclass(frozen=True)
class PreparedParty:
    """A node's identity, data and untrained party (seeded ``algorithm.seed + its index``; its privacy mechanisms
    keyed by ``keys.noise_secret``)."""

    keys: PartyKeys
    data: PartyData
    party: Any  # a FederatedParty (synchronous) or an AsyncParty (asynchronous)
    index: int
    state_dir: Path
    params: dict[str, Any]  # what every party must agree on (``session_params``)


def load_own_keys(cfg: ConsortiumConfig, config_path: Path, party_id: str, key_file: Path | None = None) -> PartyKeys:
    """``party_id``'s keys (default: keys/<party>.key.json beside the config); ConfigError if they are not the config's."""
    party_cfg = cfg.party(party_id)
    keys = load_party_keys(key_file or key_file_path(config_path.parent, party_id))
    if keys.party_id != party_id or keys.address != party_cfg.address or keys.x25519_public != party_cfg.x25519_public_bytes:
        raise ConfigError(f"key file belongs to {keys.party_id} ({keys.address}), not to party {party_id} ({party_cfg.address})")
    return keys


def prepare_party(cfg: ConsortiumConfig, config_path: Path, party_id: str, *, key_file: Path | None = None,
                  corpus: Path | None = None, vocab: Path | None = None, state_dir: Path | None = None,
                  fresh: bool = False, say: Callable[[str], None] = lambda _: None,
                  extra_params: Mapping[str, Any] | None = None, mode: Mode = Mode.sync) -> PreparedParty:
    """Check the key file, load the party's documents, build its party; state goes to ``state/<party>`` by default,
    claimed for this run (``state_folder``): ``fresh`` sets an existing folder aside first. ``extra_params`` join
    the session params (an asynchronous consortium's run number, ``ledger/runs.py``); ``mode``: which runtime drives
    the party (``Mode.sync``: a ``FederatedParty``; ``Mode.async_``: a channel party)."""
    keys = load_own_keys(cfg, config_path, party_id, key_file)
    state_dir = state_dir or config_path.parent / "state" / party_id
    data = load_party_data(cfg, party_id, corpus=corpus, vocab=vocab)
    index = cfg.party_ids.index(party_id)
    algorithm = get_algorithm(cfg.algorithm.name)
    spec = cfg.algorithm.spec()
    algorithm.check_data([data.train], spec)
    params = session_params(algorithm.name, spec, data.train.vocab) | dict(extra_params or {})
    if fresh:
        old = set_aside(state_dir)
        if old is not None:
            say(f"party {party_id}: set the earlier state aside in {old} (nothing deleted)")
    claim_state(state_dir, params)
    write_text_atomic(state_dir / PROCESS_FILE, json.dumps(process_mark() | {"party": party_id}))
    if mode is Mode.sync:  # the one party runtime's FederatedParty
        party = capability(algorithm, SyncFederated, "`node run`").party(party_id, index, data.train, spec,
                                                                         secret=keys.noise_secret)
    else:  # the asynchronous loop's party, publishing on its channel
        party = capability(algorithm, AsyncFederated, "`node run`").channel_party(party_id, index, data.train, spec,
                                                                                  secret=keys.noise_secret)
    return PreparedParty(keys=keys, data=data, party=party, index=index, state_dir=state_dir, params=params)
