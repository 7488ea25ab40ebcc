"""``mask``: every cell of N_p hidden by additive masks mod 2^b that vanish in the sum (beyond the paper).

Threat model: the aggregator is honest-but-curious (it runs the protocol,
keeps every byte it receives and tries to learn individual N_p); it does not
collude with parties. Parties are honest. Under that model the aggregator
learns N_Σ's masked form only; parties learn N_Σ, exactly as with Paillier.

Party i of P (session order) sends y_i = N_i + s_i + Σ_{j in G(i), j>i} m_ij - Σ_{j in G(i), j<i} m_ji
(mod 2^b), every cell:

- pairwise masks m_ij = AES-256-CTR keystream under HKDF(X25519(i, j), session, round, i, j)
  (Bonawitz et al. 2017) between i and each of its neighbours G(i) in the session's
  neighbour graph (``mask_graph``: SecAgg+'s sparse graph of degree k = ``mask_degree``,
  64 at 1,000 parties; every pair up to 59 parties). They cancel in Σ_i y_i,
  and even parties that collude with the aggregator cannot strip the masks of an
  honest party unless all its k neighbours collude (``mask_graph`` states the
  guarantee);
- a self mask s_i = R_i - R_{i+1 mod P} (+ Z for i = 0), R_i and Z being keystreams under
  HKDF(consortium mask secret, session, round, i) and HKDF(secret, session, round, "total").
  The secret is shared by the parties (``keyshare``), never the aggregator, who
  therefore cannot remove s_i. Parties subtract Σ_{i in C} s_i from the
  aggregate themselves, C being the contributors listed in it. The self mask is
  what keeps N_d secret if a dropped party's y_d reaches the aggregator after
  its pairwise masks were revealed for recovery (Bonawitz's double masking,
  with a shared secret instead of secret sharing since parties are honest).
  Telescoping makes that subtraction cheap: Σ_{i in C} s_i = Σ over the runs a..b of
  consecutive contributors (cyclically) of R_a - R_{b+1}, plus Z if 0 is in C: Z alone
  when nobody dropped, 2·(runs) + 1 keystreams at most, instead of |C| (1,000 keystreams
  per party and round at 1,000 parties). It hides exactly as much as independent self
  masks: (s_1, ..., s_{P-1}) is a triangular bijection of (R_1, ..., R_{P-1}) for any R_0,
  and Z makes s_0 uniform and independent of them, so (s_0, ..., s_{P-1}) is uniform on
  Z_{2^b}^P, the distribution of P independent masks.

Residue width b = bitlength(P * max_value) + 1 (``mask_bits``), not a machine
word: 15 bits in the paper-scale Table 4 run, where CSFed sets max_value to
the largest global word frequency rounded up to 2^m - 1 (511). Why the sum cannot wrap: every cell
of every N_i is at most max_value (``check_counts`` refuses anything else
before masking, and max_value is in the session meta every party checks), so
Σ_{i in C} N_i <= |C| * max_value <= P * max_value < 2^(b-1): the sum mod 2^b
is the sum. The spare top bit keeps garbage detectable (below). Residues
travel bit-packed (``fedtopic.crypto.bitpack``): ⌈V·K·b / 8⌉ bytes whatever
N_i is, so the size of an update says nothing about which cells are zero.

Every y_i is a sum with an independent uniform keystream, hence uniform on
Z_{2^b} whatever N_i is: the keystream words are w = 16, 32 or 64 bits (the
smallest that holds b), the arithmetic wraps modulo 2^w, a multiple of 2^b,
and the low b bits of a uniform word are uniform on Z_{2^b}. Masks are a
deterministic function of (session, round, party): a party must never encode
two *different* N_p for the same session and round (y - y' would be N - N'),
and a round that has to be redone gets a new round number.

Dropouts: if parties D sent nothing, Σ_{i in C} y_i keeps the pairwise masks
between C and D. The aggregator (``combine``) raises ``RecoveryNeeded`` with D
and the survivors that share masks with D (``mask_graph.adjacent_to``: k·|D| at
most, all of C under the complete graph); each of them sends
``mask_recovery(D, ctx)`` = Σ_{d in D ∩ G(i), d<i} m_di - Σ_{d in D ∩ G(i), d>i} m_id,
which cancels exactly its masks with D, and ``combine(..., recoveries=...)``
finishes. A survivor that fails to send its recovery leaves the round
uncombinable: it is redone under a new round number.
Negative counts cannot be seen in uniform residues; the decoder refuses any
sum above |C| * max_value. A garbage residue (wrong keys, tampering) is
uniform on Z_{2^b} and passes that check with probability
(|C| * max_value + 1) / 2^b <= 1/2 per cell (the spare bit), so a garbage
aggregate of n cells decodes with probability <= 2^-n.
"""

from __future__ import annotations

import functools
import hashlib
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import (
    X25519PrivateKey,
    X25519PublicKey,
)
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from fedtopic.crypto.bitpack import (
    add_packed,
    check_packed,
    pack_bits,
    packed_size,
    unpack_bits,
)
from fedtopic.crypto.errors import CodecError
from fedtopic.crypto.protect import mask_graph
from fedtopic.crypto.protect.base import (
    AGGREGATE_MAGIC,
    HEADER,
    UPDATE_MAGIC,
    InvalidUpdate,
    ProtectionContext,
    ProtectionError,
    RecoveryNeeded,
    RoundView,
    check_counts,
    check_header,
    contributor_indices,
    meta_int,
    meta_shape,
    pack_header,
    unpack_header,
)

RECOVERY_MAGIC = b"FTMR"
_PAIR_LABEL = b"fedtopic/mask/pair/v1\x00"
_SELF_LABEL = b"fedtopic/mask/self/v2\x00"
_TOTAL_LABEL = b"fedtopic/mask/total/v2\x00"
_COMMIT_LABEL = b"fedtopic/mask/commitment/v1\x00"
_U16 = struct.Struct("<H")
MASK_MAX_VALUE = (1 << 62) - 1
"""Largest cell bound a mask session accepts: counts stay far below it, fixed-point floats (``fixedpoint``) use
up to 2^53; ``mask_bits`` ≤ 64 still caps P · max_value."""


def mask_bits(parties: int, max_value: int) -> int:
    """Residue width b = bitlength(P * max_value) + 1: the largest possible sum of a cell, plus one spare bit."""
    bits = (parties * max_value).bit_length() + 1
    if bits > 64:
        raise ProtectionError(f"{parties} parties x max_value {max_value} need {bits}-bit residues, more than 64")
    return bits


def secret_commitment(mask_secret: bytes) -> str:
    """Public hex commitment to the consortium mask secret (lets parties check they hold the same one)."""
    return hashlib.sha256(_COMMIT_LABEL + mask_secret).hexdigest()


def _dtype(bits: int) -> np.dtype:
    """Machine word the residues are computed in (arithmetic mod 2^16, 2^32 or 2^64, reduced mod 2^b when packed)."""
    return np.dtype("<u2") if bits <= 16 else np.dtype("<u4") if bits <= 32 else np.dtype("<u8")


class _Keystreams:
    """AES-256-CTR keystreams of ``cells`` uniform words (zero nonce: every key is used once).

    Every stream is written into the same preallocated buffer (``update_into``): allocating a fresh
    multi-megabyte buffer per stream cost more than the AES itself. The returned array is valid until the
    next call.
    """

    def __init__(self, cells: int, bits: int) -> None:
        dtype = _dtype(bits)
        self._zeros = bytes(cells * dtype.itemsize)
        self._buf = bytearray(len(self._zeros) + 15)  # update_into wants room for one more block
        self._words = np.frombuffer(self._buf, dtype=dtype, count=cells)

    def __call__(self, key: bytes) -> np.ndarray:
        Cipher(algorithms.AES(key), modes.CTR(bytes(16))).encryptor().update_into(self._zeros, self._buf)
        return self._words


def _salt(session: str) -> bytes:
    return hashlib.sha256(b"fedtopic/mask/session\x00" + session.encode("utf-8")).digest()


@functools.lru_cache(maxsize=64)
def _own_public(private: bytes) -> bytes:
    return X25519PrivateKey.from_private_bytes(private).public_key().public_bytes_raw()


@functools.lru_cache(maxsize=4096)
def _exchange(private: bytes, public: bytes) -> bytes:
    """X25519(private, public), cached: the pair secret is the same every round (only its HKDF changes)."""
    return X25519PrivateKey.from_private_bytes(private).exchange(X25519PublicKey.from_public_bytes(public))


def _pair_key(ctx: ProtectionContext, other: int) -> bytes:
    """HKDF of the X25519 secret shared by ctx's party and party ``other``, bound to session, round and the pair."""
    own = ctx.require("x25519_private")
    publics = ctx.require("party_publics")
    if len(publics) != ctx.n_parties:
        raise ProtectionError(f"{len(publics)} X25519 public keys for {ctx.n_parties} parties")
    if _own_public(own) != publics[ctx.party_index]:
        raise ProtectionError("the party's X25519 key is not the one listed for its index")
    try:
        shared = _exchange(own, publics[other])
    except ValueError:
        raise ProtectionError(f"party {other}'s X25519 public key is unusable") from None
    lo, hi = sorted((ctx.party_index, other))
    info = _PAIR_LABEL + struct.pack("<QHH", ctx.round, lo, hi) + publics[lo] + publics[hi]
    return HKDF(hashes.SHA256(), 32, salt=_salt(ctx.session), info=info).derive(shared)


def _self_key(ctx: ProtectionContext, index: int | None) -> bytes:
    """Key of R_index, or of Z for ``index`` None (the self masks' keystreams, module docstring)."""
    secret = ctx.require("mask_secret")
    if not isinstance(secret, bytes) or len(secret) < 16:
        raise ProtectionError("the consortium mask secret must be at least 16 bytes")
    info = _TOTAL_LABEL + struct.pack("<Q", ctx.round) if index is None else \
        _SELF_LABEL + struct.pack("<QH", ctx.round, index)
    return HKDF(hashes.SHA256(), 32, salt=_salt(ctx.session), info=info).derive(secret)


def _self_mask_terms(contributors: Sequence[int], parties: int) -> tuple[list[int | None], list[int]]:
    """(added, subtracted): Σ_{i in C} s_i = Σ R_added - Σ R_subtracted, ``None`` in added standing for Z.

    s_i = R_i - R_{i+1 mod P} (+ Z for i = 0) telescopes along every run a..b of consecutive contributors on
    the ring of indices to R_a - R_{b+1}: 2 keystreams per run, Z alone when C is everyone.
    """
    inside = set(contributors)
    added: list[int | None] = [i for i in sorted(inside) if (i - 1) % parties not in inside]
    subtracted = [(i + 1) % parties for i in sorted(inside) if (i + 1) % parties not in inside]
    if 0 in inside:
        added.append(None)
    return added, subtracted


def _spec(meta: Mapping[str, Any]) -> tuple[tuple[int, int], int, int, int]:
    """(shape, parties, max_value, bits) of a session meta (whose ``mask_degree`` must fit ``parties``)."""
    shape = meta_shape(meta)
    parties = meta_int(meta, "parties", 1, 4096)
    max_value = meta_int(meta, "max_value", 1, MASK_MAX_VALUE)
    bits = meta_int(meta, "mask_bits", 2, 64)
    if bits != mask_bits(parties, max_value):
        raise InvalidUpdate(f"meta.mask_bits must be {mask_bits(parties, max_value)} for {parties} parties and "
                            f"max_value {max_value}")  # fmt: skip
    why = mask_graph.check_degree(parties, _degree(meta))
    if why is not None:
        raise InvalidUpdate(f"meta.mask_degree: {why}")
    return shape, parties, max_value, bits


def _degree(meta: Mapping[str, Any]) -> Any:
    """meta.mask_degree; every pair (P - 1) for a session opened before the neighbour graph, whose rounds an
    aggregator of this version still combines (it never touches the self masks, which changed with it)."""
    return meta.get("mask_degree", int(meta["parties"]) - 1)


def _neighbours(session: str, meta: Mapping[str, Any], index: int) -> tuple[int, ...]:
    return mask_graph.neighbours(session, int(meta["parties"]), int(_degree(meta)), index)


def _check_body(body: bytes, shape: tuple[int, int], bits: int, error: type[ProtectionError]) -> None:
    """``error`` unless ``body`` is exactly V·K packed ``bits``-bit residues (size and zero padding)."""
    try:
        check_packed(body, shape[0] * shape[1], bits)
    except CodecError as exc:
        raise error(f"masked body: {exc}") from None


def _indices(body: bytes, error: type[ProtectionError]) -> tuple[list[int], bytes]:
    """A u16 count then that many u16 party indices, strictly increasing."""
    if len(body) < 2:
        raise error("payload is truncated before its party list")
    (n,) = _U16.unpack_from(body)
    if len(body) < 2 + 2 * n:
        raise error("payload is truncated inside its party list")
    idx = list(struct.unpack_from(f"<{n}H", body, 2))
    if any(b <= a for a, b in zip(idx, idx[1:])):
        raise error("party list is not strictly increasing")
    return idx, body[2 + 2 * n:]


class MaskScheme:
    """``mask`` (see module docstring). meta = {"protection", "shape", "parties", "max_value", "mask_bits",
    "mask_degree", "mask_commitment"}."""

    name = "mask"
    min_contributors = 2  # the masks cancel in any sum, so a "sum" of one update is the update in clear

    def session_meta(self, ctx: ProtectionContext) -> dict[str, Any]:
        return {"protection": self.name, "shape": list(ctx.shape), "parties": ctx.n_parties,
                "max_value": ctx.max_value, "mask_bits": mask_bits(ctx.n_parties, ctx.max_value),
                "mask_degree": mask_graph.default_degree(ctx.n_parties) if ctx.mask_degree is None else
                ctx.mask_degree, "mask_commitment": secret_commitment(ctx.require("mask_secret"))}  # fmt: skip

    def max_update_bytes(self, meta: Mapping[str, Any]) -> int:
        """The largest update (or recovery) this session meta allows (``sizes``)."""
        shape, parties, _, bits = _spec(meta)
        return HEADER.size + _U16.size + 2 * parties + packed_size(shape[0] * shape[1], bits)

    def check_meta(self, meta: Mapping[str, Any]) -> None:
        _spec(meta)

    def encode_update(self, n_wk: np.ndarray, ctx: ProtectionContext) -> bytes:
        meta = self.session_meta(ctx)
        shape, _, max_value, bits = _spec(meta)
        counts = check_counts(n_wk, shape, max_value)
        streams = _Keystreams(counts.size, bits)
        y = counts.reshape(-1).astype(_dtype(bits))  # counts <= max_value < 2^b: exact
        i = ctx.party_index  # s_i = R_i - R_{i+1 mod P} (+ Z for party 0)
        y += streams(_self_key(ctx, i))
        y -= streams(_self_key(ctx, (i + 1) % ctx.n_parties))
        if i == 0:
            y += streams(_self_key(ctx, None))
        for j in _neighbours(ctx.session, meta, i):
            stream = streams(_pair_key(ctx, j))
            if i < j:  # mod 2^16 / 2^32 / 2^64: unsigned wrap-around
                y += stream
            else:
                y -= stream
        return pack_header(UPDATE_MAGIC, self.name, ctx.party_index, ctx.round, shape, ctx.session) + \
            pack_bits(y, bits)

    def mask_recovery(self, dropped: Sequence[int], ctx: ProtectionContext) -> bytes:
        """Survivor ctx.party_index's correction cancelling its pairwise masks with the ``dropped`` parties.

        Zero if it shares none with them (the aggregator asks such a survivor for nothing)."""
        meta = self.session_meta(ctx)
        shape, _, _, bits = _spec(meta)
        gone = sorted(set(int(d) for d in dropped))
        if not gone or ctx.party_index in gone or gone[0] < 0 or gone[-1] >= ctx.n_parties:
            raise ProtectionError(f"dropped parties {list(dropped)} must be other parties' indices < {ctx.n_parties}")
        streams = _Keystreams(shape[0] * shape[1], bits)
        c = np.zeros(shape[0] * shape[1], dtype=_dtype(bits))
        for d in sorted(set(gone).intersection(_neighbours(ctx.session, meta, ctx.party_index))):
            stream = streams(_pair_key(ctx, d))
            if ctx.party_index < d:  # undo the sign the party used in its update
                c -= stream
            else:
                c += stream
        head = pack_header(RECOVERY_MAGIC, self.name, ctx.party_index, ctx.round, shape, ctx.session)
        return head + _U16.pack(len(gone)) + struct.pack(f"<{len(gone)}H", *gone) + pack_bits(c, bits)

    def validate(self, payload: bytes, meta: Mapping[str, Any], *, round: int | None = None,
                 session: str | None = None, sender: int | None = None) -> None:  # fmt: skip
        shape, parties, _, bits = _spec(meta)
        head, body = unpack_header(payload, UPDATE_MAGIC)
        check_header(head, self.name, shape, round=round, session=session, sender=sender)
        if head.who >= parties:
            raise InvalidUpdate(f"party index {head.who} out of range for {parties} parties")
        _check_body(body, shape, bits, InvalidUpdate)

    def validate_recovery(self, blob: bytes, meta: Mapping[str, Any], *, round: int | None = None,
                          session: str | None = None) -> tuple[int, list[int]]:  # fmt: skip
        """(sender index, dropped indices) of a well-formed recovery message; InvalidUpdate otherwise."""
        shape, parties, _, bits = _spec(meta)
        head, body = unpack_header(blob, RECOVERY_MAGIC)
        check_header(head, self.name, shape, round=round, session=session)
        dropped, rest = _indices(body, InvalidUpdate)
        if head.who >= parties or not dropped or dropped[-1] >= parties or head.who in dropped:
            raise InvalidUpdate(f"recovery from party {head.who} for dropped {dropped} is out of range")
        _check_body(rest, shape, bits, InvalidUpdate)
        return head.who, dropped

    def running_sum(self, meta: Mapping[str, Any]) -> np.ndarray:
        """An empty Σ y_i for ``fold`` (the aggregator may fold updates in as they arrive)."""
        shape, _, _, bits = _spec(meta)
        return np.zeros(shape[0] * shape[1], dtype=_dtype(bits))

    def fold(self, total: np.ndarray, payload: bytes, index: int, meta: Mapping[str, Any], *, round: int,
             session: str) -> None:  # fmt: skip
        """total += y_index: the packed residues of party ``index``'s update, in one pass (``add_packed``)."""
        shape, _, _, bits = _spec(meta)
        head, body = unpack_header(payload, UPDATE_MAGIC)
        check_header(head, self.name, shape, round=round, session=session)
        if head.who != index:
            raise InvalidUpdate(f"payload of party index {head.who} is filed under party index {index}")
        _check_body(body, shape, bits, InvalidUpdate)
        add_packed(total, body, bits)

    def finish(self, total: np.ndarray, indices: Sequence[int], meta: Mapping[str, Any], *, round: int,
               session: str) -> bytes:  # fmt: skip
        """The aggregate of the contributors ``indices`` whose updates (and recoveries) are folded into ``total``."""
        shape, _, _, bits = _spec(meta)
        body = _U16.pack(len(indices)) + struct.pack(f"<{len(indices)}H", *sorted(indices)) + pack_bits(total, bits)
        return pack_header(AGGREGATE_MAGIC, self.name, len(indices), round, shape, session) + body

    def combine(self, payloads: Sequence[bytes], view: RoundView, *, recoveries: Sequence[bytes] = ()) -> bytes:
        """Σ y_i over the contributors (+ the survivors' recoveries if parties dropped); still masked by Σ s_i."""
        shape, parties, _, bits = _spec(view.meta)
        if len(view.expected) != parties:
            raise InvalidUpdate(f"the session lists {len(view.expected)} parties, meta.parties is {parties}")
        indices = contributor_indices(view)
        if not payloads or len(payloads) != len(indices):
            raise InvalidUpdate(f"{len(payloads)} payloads for {len(indices)} contributors")
        total = self.running_sum(view.meta)
        for payload, idx in zip(payloads, indices):
            self.fold(total, payload, idx, view.meta, round=view.round, session=view.session)
        dropped = sorted(set(range(parties)) - set(indices))
        needed = mask_graph.adjacent_to(view.session, parties, int(_degree(view.meta)), set(dropped))
        got: dict[int, bytes] = {}
        for blob in recoveries:
            who, gone = self.validate_recovery(blob, view.meta, round=view.round, session=view.session)
            if gone != dropped or who not in needed or who in got:
                raise InvalidUpdate(f"recovery from party {who} for {gone} does not fit dropped {dropped}"
                                    if dropped else "recovery messages for a round nobody dropped out of")
            got[who] = _indices(unpack_header(blob, RECOVERY_MAGIC)[1], InvalidUpdate)[1]
        if set(got) != needed:
            raise RecoveryNeeded(dropped, sorted(needed - set(got)))
        for correction in got.values():
            add_packed(total, correction, bits)
        return self.finish(total, indices, view.meta, round=view.round, session=view.session)

    def decode_aggregate(self, blob: bytes, ctx: ProtectionContext) -> np.ndarray:
        """N_Σ over the aggregate's contributors (int64, V x K): remove their self masks (``_self_mask_terms``)."""
        meta = self.session_meta(ctx)
        shape, _, max_value, bits = _spec(meta)
        head, body = unpack_header(blob, AGGREGATE_MAGIC, ProtectionError)
        check_header(head, self.name, shape, round=ctx.round, session=ctx.session, error=ProtectionError)
        contributors, rest = _indices(body, ProtectionError)
        if len(contributors) != head.who or not contributors or contributors[-1] >= ctx.n_parties:
            raise ProtectionError("aggregate's contributor list is inconsistent")
        _check_body(rest, shape, bits, ProtectionError)
        total = unpack_bits(rest, shape[0] * shape[1], bits)
        streams = _Keystreams(total.size, bits)
        added, subtracted = _self_mask_terms(contributors, ctx.n_parties)
        for i in added:
            total -= streams(_self_key(ctx, i))
        for j in subtracted:
            total += streams(_self_key(ctx, j))
        total &= total.dtype.type((1 << bits) - 1)  # mod 2^b
        bound = len(contributors) * max_value
        if total.size and int(total.max()) > bound:
            raise ProtectionError(f"unmasked sum exceeds {bound}: wrong mask secret, missing recovery or tampering")
        return total.astype(np.int64).reshape(shape)


MASK = MaskScheme()
