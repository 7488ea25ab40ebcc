"""What every protection is: one object that says how an update is hidden, carried and combined.

A *protection* (``aggregator.protection``, ``--protection``) is the unit a consortium chooses. It owns, in one
place, everything the layers above used to spell out by name:

- which **channel kinds** it carries (``counts``: non-negative integer matrices; ``dense``: float vectors, which an
  integer protection carries as fixed point; ``topics``: iFTM's normalised topic sets) and the aggregator
  **combiner** each kind's session uses (``combiner``);
- the **party side**: a ``PartyCodec`` per session (``counts``) that encodes an update, decodes an aggregate and
  writes recovery messages, with the consortium's **secrets** made by the launcher, sealed for every party and
  opened by each (``new_secrets``, ``sealed_params``, ``open_secrets``); the exchange that sets the secrets up may
  use another protection (``setup``: packed Paillier for the Paillier schemes);
- the **aggregator side**: the protection schemes it adds to the aggregator's combiners (``schemes``; pure
  functions without secrets, ``fedtopic.crypto.protect``);
- its **minimum contributors** (a masked sum of one update is that update) and **what it reveals** to the
  aggregator (``reveals``: docs/security.md's table and the dashboard's privacy panel).

Protections are found by name in ``fedtopic.protections.registry``, built-in and plugin alike; no other layer
branches on a protection's name. Encoding (fixed point, packing) stays in ``fedtopic.crypto``; this layer only
puts the pieces together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

import numpy as np

from fedtopic.crypto.paillier import PaillierPrivateKey, PaillierPublicKey
from fedtopic.crypto.protect import ProtectionContext, ProtectionScheme
from fedtopic.errors import CryptoError

KINDS = ("counts", "dense", "topics")
"""The channel kinds an update can travel on (``fedtopic.algorithms.federated.Channel.kind``)."""


@dataclass(frozen=True)
class Secrets:
    """What the launcher shares with every party: the Paillier key pair and/or the mask secret (None where unused),
    and anything a plugin protection needs besides (``extra``: name -> bytes)."""

    paillier_public: PaillierPublicKey | None = None
    paillier_private: PaillierPrivateKey | None = field(default=None, repr=False)
    mask_secret: bytes | None = field(default=None, repr=False)
    extra: Mapping[str, bytes] = field(default_factory=dict, repr=False)


class PartyCodec(Protocol):
    """One protection applied by one party to one session of integer matrices (shape in ``ctx``)."""

    name: str
    meta: dict[str, Any]  # the public session meta every party and the aggregator agree on
    ctx: ProtectionContext

    def encode(self, n_wk: np.ndarray, round: int) -> bytes: ...
    def decode(self, blob: bytes, round: int) -> np.ndarray: ...
    def recovery(self, dropped: list[int], round: int) -> bytes: ...
    def prefill(self, count: int) -> None: ...
    def close(self) -> None: ...

    @property
    def ciphertexts_per_update(self) -> int: ...


class Protection:
    """Base of every protection; subclasses set the class attributes and override what differs."""

    name: ClassVar[str]
    summary: ClassVar[str]
    kinds: ClassVar[frozenset[str]] = frozenset({"counts"})
    min_contributors: ClassVar[int] = 1
    reveals: ClassVar[str] = "see docs/security.md"
    """What the aggregator sees under this protection, completing "the aggregator sees …"."""
    secure_sum: ClassVar[bool] = False
    """True: the aggregator learns only the sum of a round's updates (what distributed DP needs)."""
    floats_in_clear: ClassVar[bool] = False
    """True: ``dense`` updates travel as floats (the aggregator's ``dense-sum``); False: as fixed-point integers
    through ``counts`` (``fedtopic.crypto.fixedpoint``)."""

    # what it carries ---------------------------------------------------------------------------------------------
    def carries(self, kind: str) -> bool:
        """Whether an update of ``kind`` can travel under this protection."""
        return kind in self.kinds

    def combiner(self, kind: str) -> str:
        """The aggregator combiner of a session carrying ``kind`` (by default this protection's own scheme)."""
        return self.name

    def combiner_names(self) -> frozenset[str]:
        """Every combiner a consortium under this protection opens sessions with (its kinds' and its setup's)."""
        return frozenset({self.combiner(k) for k in self.kinds} | {self.setup().combiner("counts")})

    def setup(self) -> Protection:
        """The protection of the exchange that shares the secrets (the word ranking's): itself by default."""
        return self

    def schemes(self) -> Sequence[ProtectionScheme]:
        """The aggregator-side schemes this protection adds to the aggregator's combiners (by their names)."""
        return ()

    # secrets -------------------------------------------------------------------------------------------------------
    @property
    def has_secret(self) -> bool:
        """Whether the launcher shares a secret for this protection (sealed in the setup session's params)."""
        return False

    def new_secrets(self, key_bits: int) -> Secrets:
        """Fresh consortium secrets (launcher only)."""
        return Secrets()

    def sealed_params(self, secrets: Secrets, recipients: Mapping[str, bytes], session: str) -> dict[str, str]:
        """Session params carrying ``secrets`` sealed for each party id -> X25519 public key."""
        return {}

    def open_secrets(self, meta: Mapping[str, Any], params: Mapping[str, Any], party_id: str,
                     x25519_private: bytes, session: str, key_bits: int) -> Secrets:
        """This party's secrets from the setup session's meta and params (checked against what they commit to)."""
        return Secrets()

    def context(self, secrets: Secrets, **fields: Any) -> ProtectionContext:
        """A ``ProtectionContext`` holding ``secrets`` and ``fields`` (session, shape, parties, …)."""
        return ProtectionContext(paillier_public=secrets.paillier_public, paillier_private=secrets.paillier_private,
                                 mask_secret=secrets.mask_secret, **fields)

    # the party side --------------------------------------------------------------------------------------------------
    def counts(self, ctx: ProtectionContext, *, pool: bool = False) -> PartyCodec:
        """The party's codec for a session of integer matrices of ``ctx.shape`` (``pool``: prepare Paillier
        randomness in the background)."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """What ``fedtopic algorithms --protections`` shows, as plain data."""
        return {"name": self.name, "summary": self.summary, "carries": sorted(self.kinds),
                "min_contributors": self.min_contributors, "secure_sum": self.secure_sum,
                "aggregator_sees": self.reveals}


class SchemeCodec:
    """A ``ProtectionScheme`` applied with ``ctx`` (its ``round`` replaced per call): the codec of every
    protection whose scheme needs nothing beyond the context."""

    def __init__(self, scheme: Any, ctx: ProtectionContext) -> None:
        self.scheme, self.ctx, self.name = scheme, ctx, scheme.name
        self.meta: dict[str, Any] = scheme.session_meta(ctx)

    def at(self, round: int) -> ProtectionContext:
        return replace(self.ctx, round=round)

    def encode(self, n_wk: np.ndarray, round: int) -> bytes:
        return self.scheme.encode_update(n_wk, self.at(round))

    def decode(self, blob: bytes, round: int) -> np.ndarray:
        return self.scheme.decode_aggregate(blob, self.at(round))

    def recovery(self, dropped: list[int], round: int) -> bytes:
        make = getattr(self.scheme, "mask_recovery", None)
        if make is None:
            raise CryptoError(f"protection {self.name!r} has no recovery messages")
        return make(dropped, self.at(round))

    def prefill(self, count: int) -> None:
        """Nothing to prepare."""

    def close(self) -> None:
        """Nothing to stop."""

    @property
    def ciphertexts_per_update(self) -> int:
        return 0
