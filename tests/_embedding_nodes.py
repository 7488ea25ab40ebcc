"""Shared by the embedding family's node tests: a 3-party fed-embedding-topics consortium under mask, run as real
`fedtopic node run` processes through a real aggregator process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _csfed_setup import make_consortium
from _node_procs import run_node_processes

from fedtopic.consortium.config import (
    ConsortiumConfig,
    load_consortium,
    save_consortium,
)
from fedtopic.simulation.aggregator_proc import AggregatorProcess


def run_embedding_nodes(tmp_path: Path, options: dict[str, Any], iterations: int,
                        topics: int = 4) -> tuple[Path, ConsortiumConfig, dict[str, str]]:
    """(consortium file, its config, each party's stdout) after the consortium's node processes ended."""
    config, cfg = make_consortium(tmp_path / "c", protection="mask", iterations=iterations)
    cfg = cfg.model_copy(update={"algorithm": cfg.algorithm.model_copy(update={
        "name": "fed-embedding-topics", "topics": topics, "options": options})})
    save_consortium(cfg, config)
    cfg = load_consortium(config)
    logs = {p: tmp_path / f"{p}.log" for p in cfg.party_ids}
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        outs = run_node_processes(config, cfg.party_ids, agg.url, logs)
    return config, cfg, outs
