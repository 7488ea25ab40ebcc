"""What every node process does around its algorithm: who it is, its documents, its party, its final model.

``fedtopic node run`` trains DAFed-LDA over a chain or CSFed-LDA through an
aggregator; both start from ``prepare_party`` (keys checked against the
consortium config, documents, hyper-parameters, state folder) and end with
``write_party_model`` (θ_p, which never leaves the party, and Φ_Σ as a run
folder with the stable summary keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.lda.party import LDAParty, privacy_summary
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.consortium.init import key_file_path
from fedtopic.corpus.types import Corpus
from fedtopic.crypto.keys import PartyKeys, load_party_keys
from fedtopic.errors import ConfigError
from fedtopic.eval.report import evaluate_model
from fedtopic.eval.topics import top_words
from fedtopic.node.party_data import PartyData, load_party_data
from fedtopic.runs.folder import (
    TopicModelFile,
    save_topic_model,
    write_summary,
    write_topics,
)


@dataclass(frozen=True)
class PreparedParty:
    """A node's identity, data and untrained party (seeded ``algorithm.seed + its index``; its privacy mechanisms
    keyed by ``keys.noise_secret``)."""

    keys: PartyKeys
    data: PartyData
    party: LDAParty
    index: int
    state_dir: Path


def load_own_keys(cfg: ConsortiumConfig, config_path: Path, party_id: str, key_file: Path | None = None) -> PartyKeys:
    """``party_id``'s keys (default: keys/<party>.key.json beside the config); ConfigError if they are not the config's."""
    party_cfg = cfg.party(party_id)
    keys = load_party_keys(key_file or key_file_path(config_path.parent, party_id))
    if keys.party_id != party_id or keys.address != party_cfg.address or keys.x25519_public != party_cfg.x25519_public_bytes:
        raise ConfigError(f"key file belongs to {keys.party_id} ({keys.address}), not to party {party_id} ({party_cfg.address})")
    return keys


def prepare_party(cfg: ConsortiumConfig, config_path: Path, party_id: str, *, key_file: Path | None = None,
                  corpus: Path | None = None, vocab: Path | None = None, state_dir: Path | None = None) -> PreparedParty:
    """Check the key file, load the party's documents, build its LDA party; state goes to ``state/<party>`` by default."""
    keys = load_own_keys(cfg, config_path, party_id, key_file)
    state_dir = state_dir or config_path.parent / "state" / party_id
    state_dir.mkdir(parents=True, exist_ok=True)
    data = load_party_data(cfg, party_id, corpus=corpus, vocab=vocab)
    index = cfg.party_ids.index(party_id)
    algorithm = get_algorithm(cfg.algorithm.name)
    algorithm.check_data([data.train])
    party = algorithm.party(party_id, index, data.train, cfg.algorithm.spec(), secret=keys.noise_secret)
    return PreparedParty(keys=keys, data=data, party=party, index=index, state_dir=state_dir)


def write_party_model(out: Path, party: LDAParty, test: Corpus, tokenizer: dict[str, Any], summary: dict[str, Any],
                      *, fold_in_iterations: int = 50) -> dict[str, Any]:
    """Evaluate the party's Φ_Σ and θ_p, write the run folder ``out`` (θ_p as theta.npy); return the summary.

    ``summary`` carries what only the caller knows (algorithm, dataset, parties,
    wall_seconds, bytes_sent and the algorithm's own keys); the metrics and the
    hyper-parameters are added here.
    """
    out.mkdir(parents=True, exist_ok=True)
    hyper = party.hyper
    phi, theta = party.phi(), party.theta()
    metrics = evaluate_model(phi, hyper.resolved_alpha, party.corpus, test, theta_train=theta,
                             fold_in_iterations=fold_in_iterations, seed=hyper.seed)
    np.save(out / "theta.npy", theta)
    write_topics(out, top_words(phi, party.corpus.vocab, 10))
    save_topic_model(out, TopicModelFile(phi=phi, alpha=hyper.resolved_alpha, beta=hyper.beta,
                                         vocab=party.corpus.vocab, tokenizer=tokenizer))
    full = {"topics": hyper.n_topics, "iterations": hyper.iterations, "seed": hyper.seed, "party": party.party_id,
            "sweeps": party.sweeps, "steps": party.steps} | summary | metrics
    report = party.privacy()
    if report is not None:
        full["privacy"] = privacy_summary([party])["privacy"][party.party_id]
    write_summary(out, full)
    return full | {"run": str(out)}
