"""Names → protections. Every layer that needs a protection (the consortium file, ``simulate``, a node's channels,
the aggregator's combiners, the dashboard) finds it here, built-in and plugin alike.

Entries are import paths ``module:object`` (an instance, or a class taking no arguments), loaded on first use.
Protections outside this package register without a line of fedtopic changing, as algorithms do: an installed
package names them in the entry-point group ``fedtopic.protections``, or the environment variable
``FEDTOPIC_PROTECTIONS`` does (``name=module:object[,…]``, the module importable from ``PYTHONPATH``; every process
of the consortium, the aggregator included, must see it). Neither may replace a built-in name.
"""

from __future__ import annotations

from typing import Any

from fedtopic.errors import ConfigError
from fedtopic.plugins import Registry
from fedtopic.protections.base import Protection

_ENTRIES: dict[str, str] = {
    "none": "fedtopic.protections.plain:NONE",
    "paillier-iphe": "fedtopic.protections.paillier:IPHE_PROTECTION",
    "paillier-uphe": "fedtopic.protections.paillier:UPHE_PROTECTION",
    "paillier-packed": "fedtopic.protections.paillier:PACKED_PROTECTION",
    "mask": "fedtopic.protections.mask:MASK_PROTECTION",
}
BUILT_IN = tuple(_ENTRIES)
ENV = "FEDTOPIC_PROTECTIONS"


def _check(name: str, path: str, protection: Any) -> Protection:
    if not isinstance(protection, Protection):
        raise ConfigError(f"protection {name!r}: {path} is not a fedtopic.protections.Protection")
    if protection.name != name:
        raise ConfigError(f"protection {name!r}: {path} says its name is {protection.name!r}")
    return protection


_REGISTRY = Registry("protection", _ENTRIES, "fedtopic.protections", ENV, _check)


def protection_names() -> tuple[str, ...]:
    """Every registered name, built-ins first."""
    return _REGISTRY.names()


def get_protection(name: str) -> Protection:
    """The protection registered as ``name``; an unknown name lists the known ones."""
    return _REGISTRY.get(name)


def protections_carrying(kind: str) -> tuple[str, ...]:
    """The names of the protections that carry updates of ``kind``."""
    return tuple(n for n in protection_names() if get_protection(n).carries(kind))


def require_carries(protection: Protection, kind: str, who: str) -> None:
    """ConfigError naming the protections that carry ``kind`` when ``protection`` does not (``who`` sends it)."""
    if not protection.carries(kind):
        raise ConfigError(f"{who} sends {kind}, which protection {protection.name!r} cannot carry (protections that "
                          f"can: {', '.join(protections_carrying(kind)) or 'none registered'})")
