"""The consortium config: one TOML file shared by every party (no secrets in it).

It names the parties (with their public keys), the channel-peer access matrix
CP (paper §7.1, Def. 4, Fig. 5), the chain, the algorithm and its
hyper-parameters, the aggregator and the data. ``load_consortium`` validates
everything and reports every problem at once, in one line, each located by a path
into the file (0-based indices: ``parties[2].address`` is the third
``[[parties]]`` table).

CP is stored per channel owner as the list of *other* parties that may read
the owner's channel; an owner always reads its own channel (the paper's
CP_ii = 1). Channels missing from ``[cp]`` are read by their owner only. The
paper's CP is symmetric (consortia); an asymmetric CP is allowed here and means
one-way sharing.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import tomli_w
from eth_utils import is_address, is_checksum_address, to_checksum_address
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from fedtopic.algorithms.base import TrainSpec
from fedtopic.algorithms.registry import algorithm_names, get_algorithm
from fedtopic.corpus.partition import SCHEMES
from fedtopic.errors import ConfigError, join_problems

PARTY_ID_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
PARTITION_SCHEMES = SCHEMES  # paper §8.2.3: (a) even, (b) unbalanced, (c) by label; plus Dirichlet label skew
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _checksummed(value: str | None) -> str | None:
    if value is None:
        return None
    if not is_checksum_address(value):
        hint = f" (did you mean {to_checksum_address(value)}?)" if is_address(value) else ""
        raise ValueError(f"not a checksummed address{hint}")
    return value


def _http_url(value: str) -> str:
    if not re.fullmatch(r"https?://[A-Za-z0-9.\-\[\]:]+(:\d{1,5})?(/\S*)?", value):
        raise ValueError(f"not an http(s) URL: {value!r}")
    return value


class PartyConfig(_Section):
    """A consortium member: its id (= its channel's name), display name and public keys."""

    id: str
    name: str | None = None
    address: str
    x25519_public: str
    corpus: str | None = None  # a hint; `fedtopic node run --corpus` overrides it

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not PARTY_ID_RE.fullmatch(v):
            raise ValueError("party id must be a letter then up to 31 letters, digits, '-' or '_'")
        return v

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str | None:
        return _checksummed(v)

    @field_validator("x25519_public")
    @classmethod
    def _x25519(cls, v: str) -> str:
        if not re.fullmatch(r"[0-9a-fA-F]{64}", v):
            raise ValueError("must be 64 hex digits (a 32-byte X25519 public key)")
        return v.lower()

    @property
    def display_name(self) -> str:
        """The name, or the id when no name is given."""
        return self.name or self.id

    @property
    def x25519_public_bytes(self) -> bytes:
        """The X25519 public key channel keys are wrapped for."""
        return bytes.fromhex(self.x25519_public)


class GasConfig(_Section):
    """Transaction fee settings; None means ask the node."""

    estimate_multiplier: float = Field(1.25, ge=1.0, le=10.0)
    max_fee_per_gas_gwei: PositiveFloat | None = None
    max_priority_fee_per_gas_gwei: float | None = Field(None, ge=0, allow_inf_nan=False)
    block_gas_limit: int = Field(200_000_000, ge=30_000_000)  # genesis of the embedded chain only


class ChainConfig(_Section):
    """Where the channels live: "embedded" (py-evm in process) or a JSON-RPC URL."""

    rpc: str = "embedded"
    chain_id: int | None = Field(None, gt=0)  # None: use the node's; if set, the node must match
    registry: str | None = None  # the registry contract, once deployed
    max_chunk_bytes: int = Field(100_000, ge=1_024, le=120_000)  # real nodes refuse transactions > 128 KiB
    gas: GasConfig = GasConfig()

    @field_validator("rpc")
    @classmethod
    def _rpc(cls, v: str) -> str:
        return v if v == "embedded" else _http_url(v)

    @field_validator("registry")
    @classmethod
    def _registry(cls, v: str | None) -> str | None:
        return _checksummed(v)


def _flatten(options: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"dp": {"noise_multiplier": 2}}`` (a TOML table such as ``dp = { noise_multiplier = 2 }``) as
    ``{"dp.noise_multiplier": 2}``, the spelling of ``--opt dp.noise_multiplier=2``."""
    flat: dict[str, Any] = {}
    for key, value in options.items():
        if isinstance(value, dict):
            flat |= _flatten(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


class AlgorithmConfig(_Section):
    """The algorithm (a name from ``fedtopic algorithms``), K, the iteration budget, the seed and its options.

    ``options`` are the algorithm's own, typed and validated by the algorithm
    (the same keys as ``--opt key=value``): e.g. alpha, beta and steps for the
    LDA family (α 0.1 unless given, as tomotopy; the paper's §8 ran α = 50/K, β = 0.01, 1000 iterations).
    """

    name: str = "dafed-lda"
    topics: int = Field(20, ge=2, le=100_000)
    iterations: int = Field(100, ge=1)  # the paper ran 1,000 (§8.1): at 20 parties that is 20,000+ publications
    seed: int = Field(0, ge=0, lt=2**63)
    random_delay: tuple[float, float] = (0.0, 0.0)  # seconds, simulated per-round delay range [lo, hi]
    options: dict[str, int | float | str | bool] = {}  # algorithm-specific, validated by the algorithm

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        if isinstance(data, dict):
            moved = [k for k in ("alpha", "beta", "steps") if k in data]
            if moved:
                raise ValueError(f"{', '.join(moved)}: moved to [algorithm.options] (e.g. options.{moved[0]} = ...)")
            if isinstance(data.get("options"), dict):
                data = data | {"options": _flatten(data["options"])}
        return data

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if v not in algorithm_names():
            raise ValueError(f"unknown algorithm {v!r}; known: {', '.join(algorithm_names())}")
        return v

    @field_validator("random_delay")
    @classmethod
    def _delay(cls, v: tuple[float, float]) -> tuple[float, float]:
        lo, hi = v
        if not 0 <= lo <= hi < float("inf"):
            raise ValueError("must be [lo, hi] seconds with 0 <= lo <= hi")
        return v

    @model_validator(mode="after")
    def _options(self) -> AlgorithmConfig:
        try:
            self.spec()
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return self

    def spec(self) -> TrainSpec:
        """The validated training spec: K, iterations, seed and every option (defaults filled in)."""
        return get_algorithm(self.name).spec(self.topics, self.iterations, self.seed, self.options,
                                             where="algorithm.options")


class AggregatorConfig(_Section):
    """The CSFed aggregator and how updates are protected (paper §6, Alg. 2: delta = encrypted fraction of V)."""

    url: str = "http://127.0.0.1:8000"
    protection: str = "paillier-iphe"  # a registered protection (fedtopic.protections), plugins included
    delta: float = Field(0.005, ge=0.0, le=1.0)
    key_bits: int = 2048
    straggler_deadline_seconds: PositiveFloat = 600.0
    tls_cert: str | None = None  # the aggregator's certificate, relative to this file: clients trust it alone
    link: str = "http"  # the registered synchronous link (fedtopic.links) the parties' requests travel by:
    # looked up where a party uses it (the aggregator's machine need not have a plugin link installed)

    def tls_cert_file(self, config_dir: Path) -> Path | None:
        """The pinned certificate's path for a config in ``config_dir`` (None: no HTTPS configured)."""
        return None if self.tls_cert is None else config_dir / self.tls_cert

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        return _http_url(v)

    @field_validator("protection")
    @classmethod
    def _protection(cls, v: str) -> str:
        from fedtopic.protections import protection_names

        if v not in protection_names():
            raise ValueError(f"unknown protection {v!r} (known: {', '.join(protection_names())})")
        return v

    @field_validator("key_bits")
    @classmethod
    def _bits(cls, v: int) -> int:
        if not 1024 <= v <= 8192 or v % 256:
            raise ValueError("Paillier key_bits must be a multiple of 256 in [1024, 8192]")
        return v


class DataConfig(_Section):
    """Which data: a built-in dataset split across parties, or each party's own corpus (parties[].corpus)."""

    dataset: str | None = None
    scheme: Literal[PARTITION_SCHEMES] = "a"  # type: ignore[valid-type]
    dirichlet_alpha: PositiveFloat = 0.5  # non-IID concentration, scheme = "dirichlet"


class ConsortiumConfig(_Section):
    """The whole consortium.toml."""

    name: str = Field(min_length=1, max_length=64)
    parties: list[PartyConfig] = Field(min_length=1)
    cp: dict[str, list[str]] = {}
    chain: ChainConfig = ChainConfig()
    algorithm: AlgorithmConfig = AlgorithmConfig()
    aggregator: AggregatorConfig = AggregatorConfig()
    data: DataConfig = DataConfig()

    @model_validator(mode="after")
    def _consistent(self) -> ConsortiumConfig:
        problems = cross_problems(self.model_dump())
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @property
    def party_ids(self) -> tuple[str, ...]:
        """Party ids in file order."""
        return tuple(p.id for p in self.parties)

    def party(self, party_id: str) -> PartyConfig:
        """The party with this id; ConfigError if none."""
        for p in self.parties:
            if p.id == party_id:
                return p
        raise ConfigError(f"unknown party {party_id!r} (consortium has {', '.join(self.party_ids)})")

    def readers_of(self, owner: str) -> tuple[str, ...]:
        """Everyone who may read ``owner``'s channel: the owner first, then the others in party order."""
        self.party(owner)
        granted = set(self.cp.get(owner, ()))
        return (owner,) + tuple(p for p in self.party_ids if p in granted and p != owner)

    def channels_readable_by(self, party_id: str) -> tuple[str, ...]:
        """Every channel ``party_id`` may read: its own first, then the others in party order."""
        return tuple(o for o in self.party_ids if party_id in self.readers_of(o))

    def cp_matrix(self) -> np.ndarray:
        """The paper's CP as bool (P, P): CP[i, j] is True when party j may read party i's channel."""
        ids = self.party_ids
        index = {p: i for i, p in enumerate(ids)}
        out = np.eye(len(ids), dtype=bool)
        for i, owner in enumerate(ids):
            for reader in self.readers_of(owner):
                out[i, index[reader]] = True
        return out


def cross_problems(raw: Any) -> list[str]:
    """Problems between fields (duplicates, CP naming unknown parties); lenient about types checked elsewhere."""
    if not isinstance(raw, dict):
        return []
    problems: list[str] = []
    parties = raw.get("parties") if isinstance(raw.get("parties"), list) else []
    seen: dict[tuple[str, str], int] = {}
    ids: set[str] = set()
    for i, party in enumerate(parties):
        if not isinstance(party, dict):
            continue
        for key, what in (("id", "party id"), ("address", "address"), ("x25519_public", "x25519_public key")):
            value = party.get(key)
            if not isinstance(value, str):
                continue
            norm = value.lower()
            if (key, norm) in seen:
                problems.append(f"parties[{i}].{key}: same {what} as parties[{seen[key, norm]}]")
            else:
                seen[key, norm] = i
        if isinstance(party.get("id"), str):
            ids.add(party["id"])
    cp = raw.get("cp")
    if isinstance(cp, dict):
        for owner, readers in cp.items():
            if owner not in ids:
                problems.append(f"cp: unknown channel owner {owner!r}")
            if not isinstance(readers, list):
                continue
            readers = [r for r in readers if isinstance(r, str)]
            for reader in dict.fromkeys(readers):
                if reader not in ids:
                    problems.append(f"cp: channel {owner!r} lists unknown reader {reader!r}")
            dupes = sorted(r for r, n in Counter(readers).items() if n > 1)  # not list.count: O(P³) for P parties
            problems.extend(f"cp: channel {owner!r} lists reader {r!r} twice" for r in dupes)
    return problems


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _problem_lines(exc: ValidationError) -> list[str]:
    lines: list[str] = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown setting (misspelt?)"
        elif err["type"] == "missing":
            msg = "missing (required)"
        loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith(("function-", "literal["))))
        if not loc:
            lines.extend(msg.splitlines())
        else:
            lines.append(f"{_where(loc)}: {msg}")
    return lines


def validate_consortium(data: Any) -> ConsortiumConfig:
    """Validate a parsed config; ConfigError whose one-line message lists every problem, separated by "; "."""
    try:
        return ConsortiumConfig.model_validate(data)
    except ValidationError as exc:
        lines = _problem_lines(exc)
        if not any(e["loc"] == () for e in exc.errors()):  # cross checks did not run: field errors came first
            lines += cross_problems(data)
        raise ConfigError(join_problems(lines)) from None


def load_consortium(path: str | os.PathLike[str]) -> ConsortiumConfig:
    """Read and validate consortium.toml; ConfigError (every problem, in one line) if anything is wrong."""
    where = Path(path)
    try:
        text = where.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"consortium config {where} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"consortium config {where} cannot be read: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"consortium config {where} is not valid TOML: {exc}") from None
    return validate_consortium(data)


def consortium_to_toml(cfg: ConsortiumConfig) -> str:
    """The TOML text of ``cfg`` (unset optional values are left out; ``dp.x`` options as a ``dp`` table)."""
    doc = validate_consortium(cfg.model_dump()).model_dump(mode="json", exclude_none=True)
    nested: dict[str, Any] = {}
    options = doc["algorithm"].get("options", {})
    for key, value in options.items():
        if value is True and any(k.startswith(f"{key}.") for k in options):
            continue  # ``dp = true`` beside ``dp.x`` keys: the [options.dp] table says it already
        *tables, leaf = key.split(".")
        node = nested
        for name in tables:
            node = node.setdefault(name, {})
        node[leaf] = value
    doc["algorithm"]["options"] = nested
    return tomli_w.dumps(doc)


def save_consortium(cfg: ConsortiumConfig, path: str | os.PathLike[str]) -> Path:
    """Validate ``cfg`` and write it to ``path`` as TOML (atomically, replacing any file there)."""
    target = Path(path)
    text = consortium_to_toml(cfg)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target
