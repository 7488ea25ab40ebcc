"""Names → engines, built-in and plugin alike (``fedtopic.plugins.Registry``: entry-point group
``fedtopic.engines``, or ``FEDTOPIC_ENGINES=name=module:object[,…]``). Neither may replace a built-in name."""

from __future__ import annotations

from typing import Any

from fedtopic.engines.base import Engine
from fedtopic.errors import ConfigError
from fedtopic.plugins import Registry

ENV = "FEDTOPIC_ENGINES"


def _check(name: str, path: str, engine: Any) -> Engine:
    if not isinstance(engine, Engine) or engine.name != name:
        raise ConfigError(f"engine {name!r}: {path} is not a fedtopic.engines.Engine named {name!r}")
    return engine


_REGISTRY = Registry("engine", {"threads": "fedtopic.engines.threads:THREADS", "ray": "fedtopic.engines.ray_engine:RAY"},
                     "fedtopic.engines", ENV, _check)


def engine_names() -> tuple[str, ...]:
    """Every registered engine, built-ins first."""
    return _REGISTRY.names()


def get_engine(name: str) -> Engine:
    """The engine registered as ``name``; an unknown name lists the known ones."""
    return _REGISTRY.get(name)
