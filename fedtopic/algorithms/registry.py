"""Names → algorithms. Every command (train, simulate, node run, experiment, the aggregator's session checks)
finds its algorithm here.

Entries are import paths, loaded on first use, so listing names costs no
import of numba, torch or web3. Algorithms outside this package register the same way, without a line of
fedtopic changing: an installed package names them in the entry-point group ``fedtopic.algorithms``
(``name = "module:Class"``), or the environment variable ``FEDTOPIC_ALGORITHMS`` does
(``name=module:Class[,name=module:Class…]``, the module importable from ``PYTHONPATH``; every process of a
consortium, the aggregator included, must see it). Neither may replace a built-in name.
"""

from __future__ import annotations

from typing import Any

from fedtopic.algorithms.base import Algorithm, Mode
from fedtopic.algorithms.capabilities import check_capabilities
from fedtopic.errors import ConfigError
from fedtopic.plugins import Registry

_ENTRIES: dict[str, str] = {
    "centralized-lda": "fedtopic.algorithms.lda.centralized:CentralizedLDA",
    "local-lda": "fedtopic.algorithms.lda.local:LocalLDA",
    "csfed-lda": "fedtopic.algorithms.lda.csfed:CSFedLDA",
    "dafed-lda": "fedtopic.algorithms.lda.dafed:DAFedLDA",
    "sub-lda": "fedtopic.algorithms.sub_lda.algorithm:SubLDA",
    "iftm-lda": "fedtopic.algorithms.iftm.algorithm:IFTMLDA",
    "iftm-sentencelda": "fedtopic.algorithms.iftm.algorithm:IFTMSentenceLDA",
    "nmf": "fedtopic.algorithms.nmf.centralized:CentralizedNMF",
    "nmf-sgd": "fedtopic.algorithms.nmf.sgd:NMFSGD",
    "fednmf": "fedtopic.algorithms.fednmf.algorithm:FedNMF",
    "prodlda": "fedtopic.algorithms.ntm.centralized:ProdLDA",
    "combinedtm": "fedtopic.algorithms.ntm.centralized:CombinedTM",
    "gfedntm-prodlda": "fedtopic.algorithms.gfedntm.algorithm:GFedNTMProdLDA",
    "gfedntm-combinedtm": "fedtopic.algorithms.gfedntm.algorithm:GFedNTMCombinedTM",
    "fed-embedding-topics": "fedtopic.algorithms.embedding_topics.algorithm:FedEmbeddingTopics",
}


ENV = "FEDTOPIC_ALGORITHMS"


def _check(name: str, path: str, algorithm: Any) -> Algorithm:
    if not isinstance(algorithm, Algorithm):
        raise ConfigError(f"algorithm {name!r}: {path} is not a fedtopic Algorithm")
    if algorithm.name != name:
        raise RuntimeError(f"registry entry {name!r} loads an algorithm named {algorithm.name!r}")
    check_capabilities(name, algorithm)
    return algorithm


_REGISTRY = Registry("algorithm", _ENTRIES, "fedtopic.algorithms", ENV, _check)


def algorithm_names() -> tuple[str, ...]:
    """Every registered name, in registration order."""
    return _REGISTRY.names()


def get_algorithm(name: str) -> Algorithm:
    """The algorithm registered as ``name``; an unknown name lists the known ones."""
    return _REGISTRY.get(name, " (see `fedtopic algorithms`)")


def algorithms_for(mode: Mode) -> tuple[str, ...]:
    """The names of the algorithms that run in ``mode``."""
    return tuple(n for n in algorithm_names() if mode in get_algorithm(n).modes)
