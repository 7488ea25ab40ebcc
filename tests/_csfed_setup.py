"""Shared setup for the CSFed integration tests: a 3-party consortium on synthetic data and a real aggregator."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from fedtopic.consortium.config import (
    ConsortiumConfig,
    load_consortium,
    save_consortium,
)
from fedtopic.consortium.init import init_consortium
from fedtopic.node.party_data import load_party_data
from fedtopic.node.sync_node import run_sync_node
from fedtopic.simulation.lockstep import run_lockstep_simulation

TOPICS, ITERATIONS = 5, 6


def make_consortium(root: Path, *, protection: str, steps: int = 1, deadline: float = 600.0,
                    iterations: int = ITERATIONS) -> tuple[Path, ConsortiumConfig]:
    """consortium.toml for 3 parties sharing the built-in synthetic dataset (1024-bit Paillier keys)."""
    init = init_consortium(3, root, seed=5)
    cfg = load_consortium(init.config_path)
    cfg = cfg.model_copy(update={
        "algorithm": cfg.algorithm.model_copy(update={"name": "csfed-lda", "topics": TOPICS,
                                                      "iterations": iterations, "options": {"steps": steps}}),
        "aggregator": cfg.aggregator.model_copy(update={"protection": protection, "key_bits": 1024,
                                                        "straggler_deadline_seconds": deadline}),
        "data": cfg.data.model_copy(update={"dataset": "synthetic"}),
    })
    save_consortium(cfg, init.config_path)
    return init.config_path, load_consortium(init.config_path)


def run_parties(config: Path, cfg: ConsortiumConfig, url: str, *, fail: dict | None = None,
                per_party: dict[str, dict] | None = None, **kwargs) -> dict[str, dict | BaseException]:
    """Every party as a thread in this process over real HTTP; summary or the exception each one ended with.

    ``kwargs`` go to every party's ``run_sync_node``, ``per_party[pid]`` to that party's only."""
    out: dict[str, dict | BaseException] = {}

    def one(pid: str) -> None:
        try:
            out[pid] = run_sync_node(cfg, config, pid, url=url, say=lambda _: None, round_timeout=120.0,
                                      on_round=(fail or {}).get(pid), **kwargs,
                                      **(per_party or {}).get(pid, {}))
        except BaseException as exc:  # noqa: BLE001 - reported to the test
            out[pid] = exc

    threads = [threading.Thread(target=one, args=(pid,)) for pid in cfg.party_ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    return out


def lockstep_phi(cfg: ConsortiumConfig) -> np.ndarray:
    """Φ_Σ of the in-memory lock-step simulation with the nodes' data, seeds and steps."""
    parts = [load_party_data(cfg, pid).train for pid in cfg.party_ids]
    sim = run_lockstep_simulation(parts, cfg.algorithm.spec(), list(cfg.party_ids), algorithm=cfg.algorithm.name)
    return sim.parties[0].phi()


def model_phi(config: Path, pid: str) -> np.ndarray:
    with np.load(config.parent / "state" / pid / "model" / "model.npz") as npz:
        return npz["phi"]
