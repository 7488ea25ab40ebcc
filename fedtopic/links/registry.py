"""Names → links, built-in and plugin alike (``fedtopic.plugins.Registry``: entry-point group ``fedtopic.links``,
or ``FEDTOPIC_LINKS=name=module:object[,…]``). Neither may replace a built-in name. A link that lacks a member of
its mode's shape is refused when it is loaded, in one line naming what is missing."""

from __future__ import annotations

from typing import Any

from fedtopic.errors import ConfigError
from fedtopic.links.base import LinkMode
from fedtopic.plugins import Registry

ENV = "FEDTOPIC_LINKS"
MODES: tuple[LinkMode, ...] = ("sync", "async")


def _check(name: str, path: str, link: Any) -> Any:
    missing = [m for m in ("name", "mode", "summary", "connect") if not hasattr(link, m)]
    if missing:
        raise ConfigError(f"link {name!r}: {path} has no {', '.join(missing)} (fedtopic.links.Link)")
    if link.name != name:
        raise ConfigError(f"link {name!r}: {path} says its name is {link.name!r}")
    if link.mode not in MODES:
        raise ConfigError(f"link {name!r}: mode {link.mode!r} is not one of {', '.join(MODES)}")
    if not callable(link.connect):
        raise ConfigError(f"link {name!r}: {path}.connect is not callable")
    return link


_REGISTRY = Registry("link", {"http": "fedtopic.links.http:HTTP", "in-process": "fedtopic.links.inprocess:IN_PROCESS",
                              "memory": "fedtopic.links.memory:MEMORY", "chain": "fedtopic.links.chain:CHAIN"},
                     "fedtopic.links", ENV, _check)


def link_names(mode: LinkMode | None = None) -> tuple[str, ...]:
    """Every registered link (of ``mode``), built-ins first; listing a mode loads the links."""
    names = _REGISTRY.names()
    return names if mode is None else tuple(n for n in names if get_link(n).mode == mode)


def get_link(name: str, mode: LinkMode | None = None) -> Any:
    """The link registered as ``name``; an unknown name, or one of another mode, lists the known ones."""
    if mode is None:
        return _REGISTRY.get(name)
    if name not in _REGISTRY.entries():
        raise ConfigError(f"unknown {mode}hronous link {name!r}; known: {', '.join(link_names(mode))}")
    link = _REGISTRY.get(name)
    if link.mode != mode:
        raise ConfigError(f"link {name!r} carries {link.mode}hronous runs; this run needs one for {mode}hronous "
                          f"runs: {', '.join(link_names(mode))}")
    return link
