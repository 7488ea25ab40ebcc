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

import os
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points

from fedtopic.algorithms.base import Algorithm, Mode
from fedtopic.errors import ConfigError

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
}


ENV = "FEDTOPIC_ALGORITHMS"


@cache
def _installed() -> tuple[tuple[str, str], ...]:
    """(name, "module:Class") of the installed packages' ``fedtopic.algorithms`` entry points."""
    return tuple((ep.name, ep.value) for ep in entry_points(group="fedtopic.algorithms"))


def _entries() -> dict[str, str]:
    """The built-in entries, then the installed plugins', then ``FEDTOPIC_ALGORITHMS``'s."""
    out = dict(_ENTRIES)
    extra = [item.strip() for item in os.environ.get(ENV, "").split(",") if item.strip()]
    pairs = list(_installed()) + [tuple(item.partition("=")[::2]) for item in extra]
    for name, path in pairs:
        module, sep, cls = path.partition(":")
        if not name or not sep or not module or not cls:
            raise ConfigError(f"{ENV} / entry point: {name}={path!r} is not name=module:Class")
        if name in _ENTRIES:
            raise ConfigError(f"{ENV} / entry point: {name!r} is a built-in algorithm and cannot be replaced")
        out[name] = path
    return out


def algorithm_names() -> tuple[str, ...]:
    """Every registered name, in registration order."""
    return tuple(_entries())


def get_algorithm(name: str) -> Algorithm:
    """The algorithm registered as ``name``; an unknown name lists the known ones."""
    entries = _entries()
    path = entries.get(name)
    if path is None:
        raise ConfigError(f"unknown algorithm {name!r}; known: {', '.join(entries)} (see `fedtopic algorithms`)")
    return _load(name, path)


@cache
def _load(name: str, path: str) -> Algorithm:
    module, _, cls = path.partition(":")
    try:
        algorithm = getattr(import_module(module), cls)()
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"algorithm {name!r}: cannot load {path} ({exc})") from None
    if algorithm.name != name:
        raise RuntimeError(f"registry entry {name!r} loads an algorithm named {algorithm.name!r}")
    return algorithm


def algorithms_for(mode: Mode) -> tuple[str, ...]:
    """The names of the algorithms that run in ``mode``."""
    return tuple(n for n in _entries() if mode in get_algorithm(n).modes)
