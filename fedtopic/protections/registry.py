"""Names → protections. Every layer that needs a protection (the consortium file, ``simulate``, a node's channels,
the aggregator's combiners, the dashboard) finds it here, built-in and plugin alike.

Entries are import paths ``module:object`` (an instance, or a class taking no arguments), loaded on first use.
Protections outside this package register without a line of fedtopic changing, as algorithms do: an installed
package names them in the entry-point group ``fedtopic.protections``, or the environment variable
``FEDTOPIC_PROTECTIONS`` does (``name=module:object[,…]``, the module importable from ``PYTHONPATH``; every process
of the consortium, the aggregator included, must see it). Neither may replace a built-in name.
"""

from __future__ import annotations

import os
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points

from fedtopic.errors import ConfigError
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
GROUP = "fedtopic.protections"


@cache
def _installed() -> tuple[tuple[str, str], ...]:
    """(name, "module:object") of the installed packages' ``fedtopic.protections`` entry points."""
    return tuple((ep.name, ep.value) for ep in entry_points(group=GROUP))


def _entries() -> dict[str, str]:
    """The built-in entries, then the installed plugins', then ``FEDTOPIC_PROTECTIONS``'s."""
    out = dict(_ENTRIES)
    extra = [item.strip() for item in os.environ.get(ENV, "").split(",") if item.strip()]
    for name, path in list(_installed()) + [tuple(item.partition("=")[::2]) for item in extra]:
        module, sep, attr = path.partition(":")
        if not name or not sep or not module or not attr:
            raise ConfigError(f"{ENV} / entry point: {name}={path!r} is not name=module:object")
        if name in _ENTRIES:
            raise ConfigError(f"{ENV} / entry point: {name!r} is a built-in protection and cannot be replaced")
        out[name] = path
    return out


def protection_names() -> tuple[str, ...]:
    """Every registered name, built-ins first."""
    return tuple(_entries())


def get_protection(name: str) -> Protection:
    """The protection registered as ``name``; an unknown name lists the known ones."""
    entries = _entries()
    path = entries.get(name) if isinstance(name, str) else None
    if path is None:
        raise ConfigError(f"unknown protection {name!r}; known: {', '.join(entries)}")
    return _load(name, path)


@cache
def _load(name: str, path: str) -> Protection:
    module, _, attr = path.partition(":")
    try:
        found = getattr(import_module(module), attr)
        protection = found() if isinstance(found, type) else found
    except (ImportError, AttributeError, TypeError) as exc:
        raise ConfigError(f"protection {name!r}: cannot load {path} ({exc})") from None
    if not isinstance(protection, Protection):
        raise ConfigError(f"protection {name!r}: {path} is not a fedtopic.protections.Protection")
    if protection.name != name:
        raise ConfigError(f"protection {name!r}: {path} says its name is {protection.name!r}")
    return protection


def protections_carrying(kind: str) -> tuple[str, ...]:
    """The names of the protections that carry updates of ``kind``."""
    return tuple(n for n in _entries() if get_protection(n).carries(kind))


def require_carries(protection: Protection, kind: str, who: str) -> None:
    """ConfigError naming the protections that carry ``kind`` when ``protection`` does not (``who`` sends it)."""
    if not protection.carries(kind):
        raise ConfigError(f"{who} sends {kind}, which protection {protection.name!r} cannot carry (protections that "
                          f"can: {', '.join(protections_carrying(kind)) or 'none registered'})")
