"""A throwaway consortium for a loopback simulation: consortium.toml and seeded key files (never a deployment)."""

from __future__ import annotations

from pathlib import Path

from fedtopic.algorithms.base import TrainSpec
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.config import (
    ConsortiumConfig,
    load_consortium,
    save_consortium,
)
from fedtopic.consortium.init import init_consortium


def local_consortium(work: Path, n_parties: int, spec: TrainSpec, *, algorithm: str = "csfed-lda",
                     protection: str, delta: float = 0.005, key_bits: int = 2048,
                     seed: int = 0, tls_host: str | None = None, link: str = "http") -> tuple[Path, ConsortiumConfig]:
    """A fresh consortium.toml + seeded key files in ``work`` for a run of ``algorithm`` through an aggregator on
    loopback, or with ``tls_host`` on that address behind a fresh certificate the parties pin (other machines reach it);
    ``link``: the synchronous link the parties' requests travel by. Its CP is empty: CP says who reads whose chain
    channel, which no aggregator consults, and a full CP is P² names (a million for 1,000 parties, seconds to write and
    to read back)."""
    init = init_consortium(n_parties, work, seed=seed, name="loopback", cp={})
    cfg = load_consortium(init.config_path)
    defaults = {o.name: o.default for o in get_algorithm(algorithm).options}
    cfg = cfg.model_copy(update={
        "algorithm": cfg.algorithm.model_copy(update={
            "name": algorithm, "topics": spec.topics, "iterations": spec.iterations, "seed": spec.seed,
            "options": {k: v for k, v in spec.options.items() if v is not None and v != defaults.get(k)}}),
        "aggregator": cfg.aggregator.model_copy(update={"protection": protection, "delta": delta,
                                                        "key_bits": key_bits, "link": link}),
    })
    if tls_host is not None:  # the port in the url is nominal: the harness starts the aggregator on a free one
        from fedtopic.consortium.tls_pin import pin_certificate

        cfg, _, _ = pin_certificate(cfg, init.config_path.parent, [tls_host], 8443)
    save_consortium(cfg, init.config_path)
    return init.config_path, load_consortium(init.config_path)
