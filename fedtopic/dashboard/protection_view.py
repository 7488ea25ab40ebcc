"""One line on what the aggregator or the chain can see under the protection in force (docs/security.md's
table, "What each actor learns"; a protection says it itself, ``Protection.reveals``), for the dashboard's
privacy panel."""

from __future__ import annotations

from fedtopic.errors import ConfigError
from fedtopic.protections import get_protection

_CHAIN = ("the chain and its operator see publication sizes and times, no counts (AES-GCM under keys only the "
          "readers CP allows hold); each reader sees the counts of the channels CP lets it read")


def what_is_seen(mode: str | None, protection: str | None, transport: str | None, *, dp: bool = False) -> str:
    """The line for a run of ``mode`` (sync/async) under ``protection`` or over ``transport``."""
    tail = "; every release is differentially private, so none of this reveals more than the (ε, δ) shown" \
        if dp else ""
    if mode == "async":
        if transport == "memory":
            return "an in-process board (simulation): no chain; each reader sees the counts of the channels CP " \
                   "lets it read" + tail
        return _CHAIN + tail
    if mode == "sync":
        try:
            seen = get_protection(protection or "none").reveals
        except ConfigError:  # a plugin protection this process does not have
            return f"protection {protection!r}: see docs/security.md" + tail
        return f"the aggregator sees {seen}" + tail
    return "a centralised run: one process holds every document" + tail
