"""The aggregator's settings, validated once at start (a bad value stops it before it binds a port).

Built from the consortium config (``fedtopic.consortium.config.ConsortiumConfig``:
``.parties[i].id/.address``, ``.aggregator.protection`` and
``.aggregator.straggler_deadline_seconds``) plus command-line limits. The
aggregator holds no secret of its own: it only knows each party's public
Ethereum address, and it refuses a party whose address is a well-known
development account (anyone holds those keys).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eth_utils import is_checksum_address
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fedtopic.errors import ConfigError, join_problems
from fedtopic.network.wire import ID_RE

# Accounts 0-4 of the public "test test ... junk" mnemonic (Hardhat, Anvil, Foundry): their keys are published.
DEV_ADDRESSES = frozenset(a.lower() for a in (
    "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
    "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
    "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",
))


class AggregatorSettings(BaseModel):
    """Everything the aggregator needs to run; every field checked here."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    parties: dict[str, str] = Field(min_length=1, description="party id -> checksummed Ethereum address")
    protection: str = Field("none", description="default combiner of a new session")
    straggler_deadline_seconds: float = Field(600.0, gt=0, allow_inf_nan=False)
    data_dir: Path
    max_body_bytes: int = Field(256 * 2**20, ge=1024, description="largest request body accepted on any route")
    max_json_bytes: int = Field(2**20, ge=1024, description="largest session spec (JSON) accepted")
    max_vocabulary_bytes: int = Field(64 * 2**20, ge=1024, description="largest vocabulary (JSON) accepted")
    memory_budget_bytes: int = Field(2 * 2**30, ge=2**20, description="largest memory one session's round may "
                                     "hold: parties × largest update + combine arrays")
    max_wait_seconds: float = Field(30.0, gt=0, le=600, description="longest long-poll of one request")
    max_clock_skew_seconds: float = Field(300.0, gt=0, le=3600, description="signed-request timestamp window")
    read_timeout_seconds: float = Field(60.0, gt=0, le=3600, description="longest a request body may take to arrive")
    keep_alive_seconds: int = Field(30, ge=1, le=3600, description="how long an idle connection stays open: a party "
                                    "busy sampling (or a thread of a 1,000-party simulation waiting for its turn "
                                    "under the GIL) may reuse it seconds later; uvicorn's 5 s closed connections "
                                    "under such clients' requests")

    @field_validator("parties")
    @classmethod
    def _parties(cls, v: dict[str, str]) -> dict[str, str]:
        for pid, address in v.items():
            if not ID_RE.fullmatch(pid):
                raise ValueError(f"party id {pid!r} is not a valid id")
            if not is_checksum_address(address):
                raise ValueError(f"party {pid!r}: {address!r} is not a checksummed Ethereum address")
            if address.lower() in DEV_ADDRESSES:
                raise ValueError(f"party {pid!r} uses a public development account ({address}); generate a key")
        if len({a.lower() for a in v.values()}) != len(v):
            raise ValueError("two parties share an address")
        return v

    @classmethod
    def build(cls, **fields: Any) -> AggregatorSettings:
        """Validate ``fields``; ConfigError listing every problem in one line."""
        try:
            return cls(**fields)
        except ValidationError as exc:
            lines = [f"aggregator {'.'.join(map(str, e['loc'])) or 'settings'}: {e['msg']}" for e in exc.errors()]
            raise ConfigError(join_problems(lines)) from None

    @classmethod
    def from_consortium(cls, consortium: Any, data_dir: Path, **limits: Any) -> AggregatorSettings:
        """Settings from a loaded ``ConsortiumConfig`` and command-line ``limits`` (max_body_bytes, ...)."""
        return cls.build(
            parties={p.id: p.address for p in consortium.parties},
            protection=consortium.aggregator.protection,
            straggler_deadline_seconds=consortium.aggregator.straggler_deadline_seconds,
            data_dir=data_dir,
            **limits,
        )
