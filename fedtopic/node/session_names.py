"""The aggregator session ids every party of a consortium derives alike from consortium.toml."""

from __future__ import annotations

import re

from fedtopic.consortium.config import ConsortiumConfig


def default_session(cfg: ConsortiumConfig) -> str:
    """The base of the session ids every party derives from the config (letters, digits, '-', '_'; ≤ 48 chars);
    a channel's session is ``<base>-<channel>``."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", cfg.name).strip("-_") or "consortium"
    if not name[0].isalpha():
        name = "c" + name
    a = cfg.algorithm
    return f"{name[:16]}-{a.name[:18]}-{cfg.aggregator.protection}-k{a.topics}-s{a.seed}"[:48]
