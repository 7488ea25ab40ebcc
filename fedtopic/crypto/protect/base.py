"""What every CSFed update-protection scheme shares: the party context, the scheme protocol, the wire header.

A *scheme* (Flower-style strategy object, one per ``aggregator.protection``)
has two sides:

- party side, holding secrets: ``session_meta(ctx)`` (the public session
  description every party and the aggregator agree on), ``encode_update(n_wk,
  ctx) -> bytes`` and ``decode_aggregate(blob, ctx) -> int64[V, K]``;
- aggregator side, pure functions without secrets or I/O (the network's
  ``Combiner`` protocol): ``check_meta(meta)``, ``validate(payload, meta)``,
  ``combine(payloads, round_view) -> bytes``.

Every update and aggregate starts with a fixed header that binds it to the
scheme, the session, the round, the party and the matrix shape, so a payload
replayed into another round or session, or sent under another scheme, is
refused before anything is combined.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from fedtopic.crypto.paillier import PaillierPrivateKey, PaillierPublicKey
from fedtopic.errors import CryptoError

UPDATE_MAGIC = b"FTPU"
AGGREGATE_MAGIC = b"FTPA"
WIRE_VERSION = 1
# magic | version u8 | scheme code u8 | party index (update) or contributor count (aggregate) u16 |
# round u64 | V u32 | K u32 | session tag (8 bytes of SHA-256 of the session id)
HEADER = struct.Struct("<4sBBHQII8s")
MAX_PARTIES = 4096
BUILT_IN_CODES = {"none": 1, "paillier-iphe": 2, "paillier-uphe": 3, "paillier-packed": 4, "mask": 5}
"""The built-in schemes' codes, as the wire has always carried them; any other name's is ``scheme_code``'s hash."""


def scheme_code(name: str) -> int:
    """The header's u8 code of scheme ``name``: a built-in's fixed one, else 6 + SHA-256(name) mod 250, so a plugin
    scheme needs no entry in any table (two plugins whose codes meet are refused where they are registered:
    ``network.combiners.registered_combiners``)."""
    if name in BUILT_IN_CODES:
        return BUILT_IN_CODES[name]
    return 6 + hashlib.sha256(b"fedtopic/scheme\x00" + name.encode("utf-8")).digest()[0] % 250


def _code_name(code: int) -> str:
    """A code as an error names it: the built-in's name, or the bare code."""
    return next((repr(n) for n, c in BUILT_IN_CODES.items() if c == code), f"scheme code {code}")


class ProtectionError(CryptoError):
    """A protected update or aggregate cannot be built or read (party side)."""


class InvalidUpdate(ProtectionError):
    """The aggregator refuses an update or meta: wrong scheme, shape, round, session, party, or malformed bytes."""


class RecoveryNeeded(ProtectionError):
    """A masked round lost parties: the survivors must send ``mask_recovery`` messages before it can be combined."""

    def __init__(self, dropped: Sequence[int], survivors: Sequence[int]) -> None:
        self.dropped = tuple(dropped)
        self.survivors = tuple(survivors)
        super().__init__(f"masked round lost parties {list(self.dropped)}: recovery messages needed from "
                         f"{list(self.survivors)}")  # fmt: skip


class RoundView(Protocol):
    """What a combiner learns about the round (``fedtopic.network.combiners.RoundContext`` matches it)."""

    session: str
    round: int
    meta: Mapping[str, Any]
    contributors: tuple[str, ...]
    expected: tuple[str, ...]


@dataclass(frozen=True)
class RoundInfo:
    """A plain ``RoundView`` (simulations and tests); ``contributors`` in session order."""

    session: str
    round: int
    meta: Mapping[str, Any]
    contributors: tuple[str, ...]
    expected: tuple[str, ...]


@dataclass(frozen=True)
class ProtectionContext:
    """What one party holds when it protects N_p or reads N_Σ (never given to the aggregator).

    ``party_index`` is the party's position in the session's party list (the
    consortium order), ``n_parties`` its length P. ``max_value`` bounds every
    cell of any party's N_p and must be the same at every party (it is in the
    session meta): e.g. the largest party's token count, agreed when the
    session opens. Packing and masking size their slots for a sum of P such
    cells. ``word_ranking`` (int64[V]) is
    the global frequency order, most frequent first (``ranking``, paper §6.4);
    ``word_bounds`` (int64[V]) the frequencies themselves, which bound every
    summed cell of a word's row (packed Paillier sizes each row's slots by them).
    """

    session: str
    round: int
    shape: tuple[int, int]
    n_parties: int
    party_index: int
    max_value: int = (1 << 31) - 1
    delta: float = 0.005
    paillier_public: PaillierPublicKey | None = None
    paillier_private: PaillierPrivateKey | None = field(default=None, repr=False)
    word_ranking: np.ndarray | None = field(default=None, repr=False)
    word_bounds: np.ndarray | None = field(default=None, repr=False)  # int64[V]: the consortium's word frequencies
    x25519_private: bytes | None = field(default=None, repr=False)
    party_publics: tuple[bytes, ...] = ()
    mask_secret: bytes | None = field(default=None, repr=False)
    mask_degree: int | None = None  # ``mask``'s neighbour-graph degree; None: ``mask_graph.default_degree``
    obfuscators: Any = field(default=None, repr=False)  # an ObfuscatorPool, or None: fresh randomness inline

    def __post_init__(self) -> None:
        v, k = self.shape
        if not (isinstance(v, int) and isinstance(k, int) and v > 0 and k > 0):
            raise ProtectionError(f"shape must be two positive integers, got {self.shape!r}")
        if not 1 <= self.n_parties <= MAX_PARTIES or not 0 <= self.party_index < self.n_parties:
            raise ProtectionError(f"party index {self.party_index} out of range for {self.n_parties} parties")
        if not 0 <= self.round < 2**64 or not 1 <= self.max_value < 2**62:
            raise ProtectionError("round must be in [0, 2^64) and max_value in [1, 2^62)")
        if not 0.0 <= self.delta <= 1.0:
            raise ProtectionError(f"delta must be a fraction in [0, 1], got {self.delta}")

    def require(self, name: str) -> Any:
        """The attribute ``name``, or ProtectionError saying this scheme needs it."""
        value = getattr(self, name)
        if value is None or (isinstance(value, tuple) and not value):
            raise ProtectionError(f"this protection needs {name} in the party's context")
        return value


class ProtectionScheme(Protocol):
    """One protection of N_p (party side with secrets, aggregator side without)."""

    name: str
    min_contributors: int  # the fewest updates a combine may release: a masked sum of one update is that update

    def session_meta(self, ctx: ProtectionContext) -> dict[str, Any]: ...
    def encode_update(self, n_wk: np.ndarray, ctx: ProtectionContext) -> bytes: ...
    def check_meta(self, meta: Mapping[str, Any]) -> None: ...
    def validate(self, payload: bytes, meta: Mapping[str, Any], *, round: int | None = None,
                 session: str | None = None, sender: int | None = None) -> None: ...  # fmt: skip
    def combine(self, payloads: Sequence[bytes], view: RoundView) -> bytes: ...
    def decode_aggregate(self, blob: bytes, ctx: ProtectionContext) -> np.ndarray: ...


def session_tag(session: str) -> bytes:
    """8 bytes that bind a payload to its session id."""
    return hashlib.sha256(b"fedtopic/session\x00" + session.encode("utf-8")).digest()[:8]


@dataclass(frozen=True)
class Header:
    """A parsed update or aggregate header; ``who`` is the party index (update) or contributor count (aggregate)."""

    code: int  # scheme_code of the scheme that made it
    who: int
    round: int
    shape: tuple[int, int]
    tag: bytes


def pack_header(magic: bytes, scheme: str, who: int, round: int, shape: tuple[int, int], session: str) -> bytes:
    """The fixed 32-byte header."""
    return HEADER.pack(magic, WIRE_VERSION, scheme_code(scheme), who, round, shape[0], shape[1], session_tag(session))


def unpack_header(blob: bytes, magic: bytes, error: type[ProtectionError] = InvalidUpdate) -> tuple[Header, bytes]:
    """Parse the header at the front of ``blob``; return it and the body."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise error("payload must be bytes")
    blob = bytes(blob)
    if len(blob) < HEADER.size:
        raise error(f"payload is truncated: {len(blob)} bytes, the header needs {HEADER.size}")
    mg, version, code, who, rnd, v, k, tag = HEADER.unpack_from(blob)
    if mg != magic:
        raise error(f"not a fedtopic protected {'update' if magic == UPDATE_MAGIC else 'aggregate'} (bad magic)")
    if version != WIRE_VERSION:
        raise error(f"unsupported protected payload version {version}")
    return Header(code, who, rnd, (v, k), tag), blob[HEADER.size:]


def check_header(head: Header, scheme: str, shape: tuple[int, int], *, round: int | None, session: str | None,
                 error: type[ProtectionError] = InvalidUpdate, sender: int | None = None) -> None:  # fmt: skip
    """Refuse a header of another scheme, shape, round, session or sender (each checked when given): an update
    filed under one party's index but naming another's would fail the round's combine for everyone."""
    if head.code != scheme_code(scheme):
        raise error(f"payload is protected with {_code_name(head.code)}, the session uses {scheme!r}")
    if head.shape != tuple(shape):
        raise error(f"payload shape V={head.shape[0]} K={head.shape[1]}, the session has V={shape[0]} K={shape[1]}")
    if round is not None and head.round != round:
        raise error(f"payload is for round {head.round}, this is round {round}")
    if session is not None and head.tag != session_tag(session):
        raise error("payload belongs to another session")
    if sender is not None and head.who != sender:
        raise error(f"payload names party index {head.who}, but its sender is party index {sender}")


def meta_shape(meta: Mapping[str, Any]) -> tuple[int, int]:
    """meta["shape"] as (V, K) of positive ints."""
    shape = meta.get("shape") if isinstance(meta, Mapping) else None
    if (not isinstance(shape, (list, tuple)) or len(shape) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) and 0 < x < 2**32 for x in shape)):
        raise InvalidUpdate(f"meta.shape must be [V, K] (two positive integers), got {shape!r}")
    return int(shape[0]), int(shape[1])


def meta_int(meta: Mapping[str, Any], name: str, lo: int, hi: int) -> int:
    """meta[name] as an int in [lo, hi]."""
    value = meta.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise InvalidUpdate(f"meta.{name} must be an integer in [{lo}, {hi}], got {value!r}")
    return value


def contributor_indices(view: RoundView) -> list[int]:
    """Session-order indices of the round's contributors (InvalidUpdate if one is not an expected party)."""
    order = {p: i for i, p in enumerate(view.expected)}
    missing = [p for p in view.contributors if p not in order]
    if missing or len(set(view.contributors)) != len(view.contributors):
        raise InvalidUpdate(f"contributors {list(view.contributors)} are not distinct members of the session")
    return [order[p] for p in view.contributors]


def check_counts(n_wk: np.ndarray, shape: tuple[int, int], max_value: int) -> np.ndarray:
    """N_p as int64 (V, K) after checking shape, integer dtype and 0 <= cell <= max_value."""
    arr = np.asarray(n_wk)
    if arr.shape != tuple(shape) or not np.issubdtype(arr.dtype, np.integer):
        raise ProtectionError(f"N_p must be an integer matrix of shape {tuple(shape)}, got {arr.shape} {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < 0 or arr.max() > max_value):
        bad = int(np.argmax((arr < 0) | (arr > max_value)))
        w, k = divmod(bad, shape[1])
        raise ProtectionError(f"count {int(arr.flat[bad])} at word {w}, topic {k} is outside [0, {max_value}]")
    return arr
