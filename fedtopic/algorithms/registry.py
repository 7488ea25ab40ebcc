"""Names → algorithms. Every command (train, simulate, node run, experiment, the aggregator's session checks)
finds its algorithm here.

Entries are import paths, loaded on first use, so listing names costs no
import of numba, torch or web3.
"""

from __future__ import annotations

from functools import cache
from importlib import import_module

from fedtopic.algorithms.base import Algorithm, Mode
from fedtopic.errors import ConfigError

_ENTRIES: dict[str, str] = {
    "centralized-lda": "fedtopic.algorithms.centralized_lda:CentralizedLDA",
    "local-lda": "fedtopic.algorithms.local_lda:LocalLDA",
    "csfed-lda": "fedtopic.algorithms.csfed_lda:CSFedLDA",
    "dafed-lda": "fedtopic.algorithms.dafed_lda:DAFedLDA",
    "sub-lda": "fedtopic.algorithms.sub_lda:SubLDA",
    "iftm-lda": "fedtopic.algorithms.iftm_lda:IFTMLDA",
    "iftm-sentencelda": "fedtopic.algorithms.iftm_lda:IFTMSentenceLDA",
    "nmf": "fedtopic.algorithms.nmf:CentralizedNMF",
    "nmf-sgd": "fedtopic.algorithms.nmf_sgd:NMFSGD",
    "fednmf": "fedtopic.algorithms.fednmf:FedNMF",
    "prodlda": "fedtopic.algorithms.prodlda:ProdLDA",
    "combinedtm": "fedtopic.algorithms.prodlda:CombinedTM",
    "gfedntm-prodlda": "fedtopic.algorithms.gfedntm:GFedNTMProdLDA",
    "gfedntm-combinedtm": "fedtopic.algorithms.gfedntm:GFedNTMCombinedTM",
}


def algorithm_names() -> tuple[str, ...]:
    """Every registered name, in registration order."""
    return tuple(_ENTRIES)


@cache
def get_algorithm(name: str) -> Algorithm:
    """The algorithm registered as ``name``; an unknown name lists the known ones."""
    path = _ENTRIES.get(name)
    if path is None:
        raise ConfigError(f"unknown algorithm {name!r}; known: {', '.join(_ENTRIES)} (see `fedtopic algorithms`)")
    module, _, cls = path.partition(":")
    algorithm = getattr(import_module(module), cls)()
    if algorithm.name != name:
        raise RuntimeError(f"registry entry {name!r} loads an algorithm named {algorithm.name!r}")
    return algorithm


def algorithms_for(mode: Mode) -> tuple[str, ...]:
    """The names of the algorithms that run in ``mode``."""
    return tuple(n for n in _ENTRIES if mode in get_algorithm(n).modes)
