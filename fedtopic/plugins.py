"""Names → objects, built-in and plugin alike: what the algorithm, protection and engine registries share.

Entries are import paths ``module:object``, loaded on first use, so listing names imports nothing heavy. An object
outside fedtopic registers without a line of fedtopic changing: an installed package names it in an entry-point
group (``fedtopic.algorithms``, ``fedtopic.protections``, ``fedtopic.engines``), or an environment variable does
(``name=module:object[,…]``, the module importable from ``PYTHONPATH``; every process of a consortium that needs it
must see it). Neither may replace a built-in name.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points
from typing import Any

from fedtopic.errors import ConfigError


@cache
def _installed(group: str) -> tuple[tuple[str, str], ...]:
    """(name, "module:object") of the installed packages' entry points in ``group``."""
    return tuple((ep.name, ep.value) for ep in entry_points(group=group))


class Registry:
    """One kind of plug: ``built_in`` entries, then the installed plugins' (``group``), then ``env``'s."""

    def __init__(self, kind: str, built_in: Mapping[str, str], group: str, env: str,
                 check: Callable[[str, str, Any], Any]) -> None:
        """``check(name, path, loaded)``: the registered object from what ``path`` names (an instance, or a class
        taking no arguments, already instantiated), or ConfigError."""
        self.kind, self.built_in, self.group, self.env, self._check = kind, dict(built_in), group, env, check
        self._cache: dict[tuple[str, str], Any] = {}

    def entries(self) -> dict[str, str]:
        """Every name → path, built-ins first."""
        out = dict(self.built_in)
        extra = [item.strip() for item in os.environ.get(self.env, "").split(",") if item.strip()]
        for name, path in list(_installed(self.group)) + [tuple(item.partition("=")[::2]) for item in extra]:
            module, sep, attr = path.partition(":")
            if not name or not sep or not module or not attr:
                raise ConfigError(f"{self.env} / entry point: {name}={path!r} is not name=module:object")
            if name in self.built_in:
                raise ConfigError(f"{self.env} / entry point: {name!r} is a built-in {self.kind} and cannot be "
                                  "replaced")
            out[name] = path
        return out

    def names(self) -> tuple[str, ...]:
        return tuple(self.entries())

    def get(self, name: str, hint: str = "") -> Any:
        """The object registered as ``name``; an unknown name lists the known ones."""
        entries = self.entries()
        path = entries.get(name) if isinstance(name, str) else None
        if path is None:
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {', '.join(entries)}{hint}")
        key = (name, path)
        if key not in self._cache:
            module, _, attr = path.partition(":")
            try:
                found = getattr(import_module(module), attr)
                loaded = found() if isinstance(found, type) else found
            except (ImportError, AttributeError, TypeError) as exc:
                raise ConfigError(f"{self.kind} {name!r}: cannot load {path} ({exc})") from None
            self._cache[key] = self._check(name, path, loaded)
        return self._cache[key]
