"""The compiled contract artifacts (ABI + bytecode) shipped in ``fedtopic/ledger/artifacts``."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from fedtopic.ledger.errors import CompileError

REGISTRY = "ConsortiumRegistry"
CHANNEL = "PartyChannel"


@lru_cache(maxsize=None)
def load_artifact(name: str) -> dict[str, Any]:
    """``{"abi": [...], "bytecode": "0x...", ...}`` of contract ``name`` (REGISTRY or CHANNEL)."""
    try:
        text = resources.files("fedtopic.ledger").joinpath("artifacts", f"{name}.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CompileError(f"no compiled artifact for contract {name!r} in fedtopic/ledger/artifacts") from None
    return json.loads(text)
