"""Names → engines, built-in and plugin alike (as algorithms and protections are found).

Entries are ``module:object`` paths (an instance, or a class taking no arguments), loaded on first use. An engine
outside this package registers without a line of fedtopic changing: an installed package names it in the
entry-point group ``fedtopic.engines``, or ``FEDTOPIC_ENGINES=name=module:object[,…]`` does. Neither may replace a
built-in name.
"""

from __future__ import annotations

import os
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points

from fedtopic.engines.base import Engine
from fedtopic.errors import ConfigError

_ENTRIES: dict[str, str] = {"threads": "fedtopic.engines.threads:THREADS", "ray": "fedtopic.engines.ray_engine:RAY"}
ENV = "FEDTOPIC_ENGINES"
GROUP = "fedtopic.engines"


@cache
def _installed() -> tuple[tuple[str, str], ...]:
    return tuple((ep.name, ep.value) for ep in entry_points(group=GROUP))


def _entries() -> dict[str, str]:
    out = dict(_ENTRIES)
    extra = [item.strip() for item in os.environ.get(ENV, "").split(",") if item.strip()]
    for name, path in list(_installed()) + [tuple(item.partition("=")[::2]) for item in extra]:
        module, sep, attr = path.partition(":")
        if not name or not sep or not module or not attr:
            raise ConfigError(f"{ENV} / entry point: {name}={path!r} is not name=module:object")
        if name in _ENTRIES:
            raise ConfigError(f"{ENV} / entry point: {name!r} is a built-in engine and cannot be replaced")
        out[name] = path
    return out


def engine_names() -> tuple[str, ...]:
    """Every registered engine, built-ins first."""
    return tuple(_entries())


def get_engine(name: str) -> Engine:
    """The engine registered as ``name``; an unknown name lists the known ones."""
    entries = _entries()
    path = entries.get(name) if isinstance(name, str) else None
    if path is None:
        raise ConfigError(f"unknown engine {name!r}; known: {', '.join(entries)}")
    return _load(name, path)


@cache
def _load(name: str, path: str) -> Engine:
    module, _, attr = path.partition(":")
    try:
        found = getattr(import_module(module), attr)
        engine = found() if isinstance(found, type) else found
    except (ImportError, AttributeError, TypeError) as exc:
        raise ConfigError(f"engine {name!r}: cannot load {path} ({exc})") from None
    if not isinstance(engine, Engine) or engine.name != name:
        raise ConfigError(f"engine {name!r}: {path} is not a fedtopic.engines.Engine named {name!r}")
    return engine
