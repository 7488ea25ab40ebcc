"""Protections as one layer: one object per protection (``base.Protection``), found by name in ``registry``.

See ``base`` for what a protection owns; ``plain`` (``none``), ``paillier`` and ``mask`` are the built-ins.
"""

from fedtopic.protections.base import (
    KINDS,
    PartyCodec,
    Protection,
    SchemeCodec,
    Secrets,
)
from fedtopic.protections.registry import (
    get_protection,
    protection_names,
    protections_carrying,
    require_carries,
)

__all__ = ["KINDS", "PartyCodec", "Protection", "SchemeCodec", "Secrets", "get_protection", "protection_names",
           "protections_carrying",
           "require_carries"]
