"""Paillier protection of chosen rows of N_p: δ-IPHE (paper Def. 3, Alg. 2), δ-UPHE (§8.3), packed full HE.

Alg. 2 with the sparse representation of §6.3: the rows of the protected
words are sent *dense* (every one of the K cells, zeros included, so the
aggregator cannot even see which cells are non-zero) as Paillier ciphertexts;
every other row goes as sparse plaintext triplets (``codec``). The aggregator
multiplies ciphertexts (Enc(a) Enc(b) = Enc(a + b)) and adds plaintexts; it
never holds the secret key. It does learn *which* words are protected (the
meta lists them; in the paper the triplets carry f), not their counts.

- ``paillier-iphe``: the top ⌈δ·V⌉ words of the *global* ranking (most
  frequent first, ``ranking``);
- ``paillier-uphe``: the ⌈δ·V⌉ least frequent words, the paper's contrast;
- ``paillier-packed``: every row (δ = 100 %).

All three pack many counts into one plaintext (``packing``; slots sized for the
sum over P parties of cells <= max_value). The paper encrypts one count per
ciphertext; packing protects the same cells with ~100× fewer encryptions (at
the paper's scale 22 ciphertexts instead of 2,640) and Paillier's semantic
security covers the whole plaintext, so the aggregator learns nothing more. A
meta with ``"packed": false`` (one count per ciphertext) is still read.

The session meta fixes the format: {"protection", "shape": [V, K],
"paillier_n": hex, "rows": sorted protected word ids or "all", "packed":
bool, "parties": P, "max_value": bound of one party's cell}, and with
"row_bounds": "word_frequencies" and "ciphertexts": n the protected rows are
packed in bands (``packing.BandedLayout``): a row's slots are as wide as the
bit length of the word's frequency in the consortium, which bounds the row's
summed cells and which every party holds from the setup exchange (the
aggregator does not: it sees only n, the count of ciphertexts, a function of
how many protected words fall in each power-of-two band of frequency). Negative counts
inside ciphertexts cannot be seen by the aggregator; the party's encoder
refuses them and the decoder refuses any sum beyond P * max_value.

Body of an update and of an aggregate: n_ciphertexts u32 | fixed-width
ciphertexts | codec payload of the plaintext rows (protected rows all zero).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gmpy2
import numpy as np

from fedtopic.crypto.codec import MAX_COUNT, encode_counts
from fedtopic.crypto.packing import (
    BandedLayout,
    PackingLayout,
    banded_layout,
    pack,
    pack_banded,
    packing_layout,
    unpack,
    unpack_banded,
)
from fedtopic.crypto.paillier import (
    PaillierPublicKey,
    ciphertext_bytes,
    plaintext_bits,
    public_key_from_hex,
    public_key_to_hex,
)
from fedtopic.crypto.protect.base import (
    AGGREGATE_MAGIC,
    HEADER,
    UPDATE_MAGIC,
    InvalidUpdate,
    ProtectionContext,
    ProtectionError,
    RoundView,
    check_counts,
    check_header,
    contributor_indices,
    meta_int,
    meta_shape,
    pack_header,
    unpack_header,
)
from fedtopic.crypto.protect.fastpaillier import ObfuscatorPool, decrypt_parallel
from fedtopic.crypto.protect.plain import decode_plain, sum_plain
from fedtopic.crypto.protect.sizes import codec_bound
from fedtopic.errors import CryptoError

_COUNT = struct.Struct("<I")


def protected_row_count(delta: float, n_words: int) -> int:
    """⌈δ·V⌉, at most V: how many words δ-IPHE / δ-UPHE encrypts (any δ > 0 protects at least one)."""
    return min(n_words, math.ceil(round(delta * n_words, 9)))  # round(): 0.005 * 200 is 1, not 2 from 1.0000000000000002


def protected_rows(ranking: np.ndarray, delta: float, select: str) -> np.ndarray:
    """Sorted word ids to encrypt: the top (``select="top"``) or bottom ⌈δ·V⌉ of ``ranking``, or all of them."""
    order = np.asarray(ranking)
    v = order.size
    if order.ndim != 1 or not np.issubdtype(order.dtype, np.integer) \
            or not np.array_equal(np.sort(order), np.arange(v)):
        raise ProtectionError("the word ranking must be a permutation of 0..V-1")
    if select == "all":
        return np.arange(v, dtype=np.int64)
    n = protected_row_count(delta, v)
    chosen = order[:n] if select == "top" else order[v - n:]
    return np.sort(chosen).astype(np.int64)


@dataclass(frozen=True)
class RowsSpec:
    """A Paillier-rows session meta, parsed and checked (shape, public key, protected rows, packing)."""

    shape: tuple[int, int]
    public: PaillierPublicKey
    rows: np.ndarray
    packed: bool
    parties: int
    max_value: int
    layout: PackingLayout | BandedLayout | None
    n_ciphertexts: int
    banded: bool = False  # packed in bands of the words' frequencies (``layout`` None where they are unknown)


def _banded(rows: np.ndarray, k: int, word_bounds: np.ndarray, public: PaillierPublicKey) -> BandedLayout:
    """The bands of the protected rows' cells (row-major, K per row) under ``word_bounds`` (int64[V])."""
    return banded_layout(np.repeat(np.asarray(word_bounds, dtype=np.int64)[rows], k),
                         plaintext_bits=plaintext_bits(public))


def parse_rows_meta(meta: Mapping[str, Any], word_bounds: np.ndarray | None = None) -> RowsSpec:
    """The checked form of a session meta; InvalidUpdate naming the bad field otherwise. ``word_bounds``
    (int64[V], a party's copy of the consortium's word frequencies) gives a banded meta its layout; without them
    (the aggregator) the spec knows only its count of ciphertexts."""
    shape = meta_shape(meta)
    try:
        public = public_key_from_hex(meta.get("paillier_n"))
    except CryptoError as exc:
        raise InvalidUpdate(f"meta.paillier_n: {exc}") from None
    raw_rows = meta.get("rows")
    if raw_rows == "all":
        rows = np.arange(shape[0], dtype=np.int64)
    elif isinstance(raw_rows, (list, tuple)) and all(isinstance(r, int) and not isinstance(r, bool) for r in raw_rows):
        rows = np.asarray(raw_rows, dtype=np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= shape[0] or np.any(np.diff(rows) <= 0)):
            raise InvalidUpdate(f"meta.rows must be strictly increasing word ids in [0, {shape[0]})")
    else:
        raise InvalidUpdate("meta.rows must be a list of word ids or \"all\"")
    packed = meta.get("packed")
    if not isinstance(packed, bool):
        raise InvalidUpdate(f"meta.packed must be true or false, got {packed!r}")
    parties = meta_int(meta, "parties", 1, 4096)
    max_value = meta_int(meta, "max_value", 1, MAX_COUNT)
    if max_value * parties >= public.n:
        raise InvalidUpdate("meta: parties * max_value does not fit a Paillier plaintext")
    layout: PackingLayout | BandedLayout | None = None
    if meta.get("row_bounds") is not None:
        if meta.get("row_bounds") != "word_frequencies" or not packed or not rows.size:
            raise InvalidUpdate("meta.row_bounds must be \"word_frequencies\", on packed protected rows")
        count = meta_int(meta, "ciphertexts", 1, int(rows.size) * shape[1])
        if word_bounds is not None:
            if np.shape(word_bounds) != (shape[0],):
                raise InvalidUpdate(f"the word bounds have shape {np.shape(word_bounds)}, V is {shape[0]}")
            layout = _banded(rows, shape[1], word_bounds, public)
            if layout.n_plaintexts != count:
                raise InvalidUpdate(f"meta.ciphertexts is {count}, this party's word frequencies make "
                                    f"{layout.n_plaintexts} (the parties disagree on the consortium's frequencies)")
        return RowsSpec(shape, public, rows, packed, parties, max_value, layout, count, banded=True)
    if packed and rows.size:
        try:
            layout = packing_layout(int(rows.size) * shape[1], max_value=max_value, n_summands=parties,
                                    plaintext_bits=plaintext_bits(public))  # fmt: skip
        except CryptoError as exc:
            raise InvalidUpdate(f"meta: {exc}") from None
    count = layout.n_plaintexts if layout else int(rows.size) * shape[1]
    return RowsSpec(shape, public, rows, packed, parties, max_value, layout, count)


def _party_spec(scheme: PaillierRowsScheme, ctx: ProtectionContext, meta: Mapping[str, Any] | None) -> RowsSpec:
    """A party's spec of the session: its layout from the meta and, when banded, from its word bounds."""
    spec = parse_rows_meta(meta if meta is not None else scheme.session_meta(ctx), ctx.word_bounds)
    if spec.banded and spec.layout is None:
        raise ProtectionError("the session packs rows by the consortium's word frequencies, which this party "
                              "does not hold")
    return spec


def _split(body: bytes, spec: RowsSpec, error: type[ProtectionError]) -> tuple[list[int], bytes]:
    """Ciphertexts (range-checked) and the codec part of a body."""
    if len(body) < _COUNT.size:
        raise error("payload is truncated before its ciphertext count")
    (count,) = _COUNT.unpack_from(body)
    if count != spec.n_ciphertexts:
        raise error(f"payload has {count} ciphertexts, the session expects {spec.n_ciphertexts}")
    width = ciphertext_bytes(spec.public)
    end = _COUNT.size + count * width
    if len(body) < end:
        raise error(f"payload is truncated: {len(body)} body bytes, its ciphertexts need {end}")
    nsquare = spec.public.nsquare
    cts = [int.from_bytes(body[i:i + width], "big") for i in range(_COUNT.size, end, width)]
    if any(not 0 < c < nsquare for c in cts):
        raise error("a Paillier ciphertext is out of range (0, n^2)")
    return cts, body[end:]


def _plain_part(codec: bytes, spec: RowsSpec, error: type[ProtectionError]) -> np.ndarray:
    """The sparse plaintext rows; refuses a non-zero cell in a protected row (it would leak in the clear)."""
    plain = decode_plain(codec, spec.shape, error)
    if spec.rows.size and np.any(plain[spec.rows]):
        w = int(spec.rows[np.flatnonzero(plain[spec.rows].any(axis=1))[0]])
        raise error(f"protected word {w} appears in the clear")
    return plain


def _join(cts: Sequence[int], public: PaillierPublicKey, codec: bytes) -> bytes:
    width = ciphertext_bytes(public)
    return _COUNT.pack(len(cts)) + b"".join(int(c).to_bytes(width, "big") for c in cts) + codec


class PaillierRowsScheme:
    """δ-IPHE / δ-UPHE / packed full Paillier (see module docstring); ``select`` is "top", "bottom" or "all"."""

    def __init__(self, name: str, select: str, packed: bool) -> None:
        self.name, self.select, self.packed = name, select, packed
        self.min_contributors = 1  # only the parties decrypt; the aggregator sees no sum in clear

    def session_meta(self, ctx: ProtectionContext) -> dict[str, Any]:
        public = ctx.require("paillier_public")
        rows: Any = "all"
        if self.select != "all":
            ranking = ctx.require("word_ranking")
            if np.asarray(ranking).shape != (ctx.shape[0],):
                raise ProtectionError(f"the word ranking has shape {np.asarray(ranking).shape}, V is {ctx.shape[0]}")
            rows = protected_rows(ranking, ctx.delta, self.select).tolist()
        meta = {"protection": self.name, "shape": list(ctx.shape), "paillier_n": public_key_to_hex(public),
                "rows": rows, "packed": self.packed, "parties": ctx.n_parties, "max_value": ctx.max_value}
        uniform = parse_rows_meta(meta)  # fail here, at the party, rather than at the aggregator
        if self.packed and ctx.word_bounds is not None and uniform.rows.size:
            banded = _banded(uniform.rows, ctx.shape[1], ctx.word_bounds, public).n_plaintexts
            if banded < uniform.n_ciphertexts:
                meta |= {"row_bounds": "word_frequencies", "ciphertexts": banded}
        return meta

    def max_update_bytes(self, meta: Mapping[str, Any]) -> int:
        """The largest update (or recovery) this session meta allows (``sizes``)."""
        spec = parse_rows_meta(meta)
        v, k = spec.shape
        return HEADER.size + _COUNT.size + spec.n_ciphertexts * ciphertext_bytes(spec.public) + codec_bound(v, k)

    def check_meta(self, meta: Mapping[str, Any]) -> None:
        parse_rows_meta(meta)

    def _plaintexts(self, block: np.ndarray, spec: RowsSpec) -> list[int]:
        flat = block.reshape(-1)
        if isinstance(spec.layout, BandedLayout):
            try:  # the counts are checked non-negative and of the session's shape: only a bound can fail
                return pack_banded(flat, spec.layout)
            except CryptoError:
                raise ProtectionError("a count exceeds its word's frequency in the consortium (the bound its "
                                      "slots are sized for)") from None
        return pack(flat, spec.layout) if spec.layout else [int(x) for x in flat]

    def encode_update(self, n_wk: np.ndarray, ctx: ProtectionContext, meta: Mapping[str, Any] | None = None) -> bytes:
        """U_p of Alg. 2; ``meta`` defaults to ``session_meta(ctx)`` (pass the session's to skip rebuilding it)."""
        spec = _party_spec(self, ctx, meta)
        public = ctx.require("paillier_public")
        if spec.public.n != public.n:
            raise ProtectionError("the session's Paillier key is not the party's")
        counts = check_counts(n_wk, ctx.shape, spec.max_value)
        plaintexts = self._plaintexts(counts[spec.rows], spec)
        pool = ctx.obfuscators
        if pool is None:
            with ObfuscatorPool(public, ctx.paillier_private) as transient:
                obfuscators = transient.take(len(plaintexts))
        else:
            obfuscators = pool.take(len(plaintexts))
        n = gmpy2.mpz(public.n)
        nsquare = n * n
        cts = [int((n * m + 1) * gmpy2.mpz(r) % nsquare) for m, r in zip(plaintexts, obfuscators)]
        rest = counts.copy()
        rest[spec.rows] = 0
        head = pack_header(UPDATE_MAGIC, self.name, ctx.party_index, ctx.round, ctx.shape, ctx.session)
        return head + _join(cts, public, encode_counts(rest))

    def validate(self, payload: bytes, meta: Mapping[str, Any], *, round: int | None = None,
                 session: str | None = None, sender: int | None = None) -> None:  # fmt: skip
        spec = parse_rows_meta(meta)
        head, body = unpack_header(payload, UPDATE_MAGIC)
        check_header(head, self.name, spec.shape, round=round, session=session, sender=sender)
        if head.who >= spec.parties:
            raise InvalidUpdate(f"party index {head.who} out of range for {spec.parties} parties")
        _, codec = _split(body, spec, InvalidUpdate)
        _plain_part(codec, spec, InvalidUpdate)

    def combine(self, payloads: Sequence[bytes], view: RoundView) -> bytes:
        spec = parse_rows_meta(view.meta)
        indices = contributor_indices(view)
        if not payloads or len(payloads) != len(indices) or len(payloads) > spec.parties:
            raise InvalidUpdate(f"{len(payloads)} payloads for {len(indices)} contributors of {spec.parties}")
        nsquare = gmpy2.mpz(spec.public.nsquare)
        total: list[Any] | None = None
        plains = []
        for payload, idx in zip(payloads, indices):
            head, body = unpack_header(payload, UPDATE_MAGIC)
            check_header(head, self.name, spec.shape, round=view.round, session=view.session)
            if head.who != idx:
                raise InvalidUpdate(f"payload of party index {head.who} is filed under party index {idx}")
            cts, codec = _split(body, spec, InvalidUpdate)
            plains.append(_plain_part(codec, spec, InvalidUpdate))
            total = [gmpy2.mpz(c) for c in cts] if total is None else [t * c % nsquare for t, c in zip(total, cts)]
        head = pack_header(AGGREGATE_MAGIC, self.name, len(payloads), view.round, spec.shape, view.session)
        return head + _join(total or [], spec.public, encode_counts(sum_plain(plains, spec.shape)))

    def decode_aggregate(self, blob: bytes, ctx: ProtectionContext, meta: Mapping[str, Any] | None = None,
                         *, workers: int | None = None) -> np.ndarray:  # fmt: skip
        """N_Σ (int64, V x K): decrypt the protected rows with the party's secret key, add the plaintext rows."""
        spec = _party_spec(self, ctx, meta)
        private = ctx.require("paillier_private")
        if private.public_key.n != spec.public.n:
            raise ProtectionError("the party's Paillier secret key does not match the session's public key")
        head, body = unpack_header(blob, AGGREGATE_MAGIC, ProtectionError)
        check_header(head, self.name, ctx.shape, round=ctx.round, session=ctx.session, error=ProtectionError)
        if not 1 <= head.who <= spec.parties:
            raise ProtectionError(f"aggregate claims {head.who} contributors of {spec.parties}")
        cts, codec = _split(body, spec, ProtectionError)
        total = _plain_part(codec, spec, ProtectionError).astype(np.int64)
        plain = decrypt_parallel(private, cts, workers=workers) if cts else []
        if spec.layout:
            try:
                values = (unpack_banded(plain, spec.layout) if isinstance(spec.layout, BandedLayout)
                          else unpack(plain, spec.layout))
            except CryptoError as exc:
                raise ProtectionError(f"aggregate does not decrypt to valid packed counts: {exc}") from None
        else:
            bound = head.who * spec.max_value
            if any(m > bound for m in plain):
                raise ProtectionError(f"a decrypted sum exceeds {bound} (wrong key or tampered aggregate)")
            values = np.array(plain, dtype=np.int64)
        total[spec.rows] = values.reshape(spec.rows.size, spec.shape[1])
        return total


def aggregator_view(blob: bytes, meta: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """What the aggregator reads in an aggregate without any secret: (counts int64[V,K], protected word ids).

    The counts are N_Σ's plaintext rows with the protected rows all zero; the protected
    rows exist for it only as ciphertexts. This is the input of the §6.4 model inversion
    attack (Eqs. 13–14, ``fedtopic.eval.attacks.inversion``).
    """
    spec = parse_rows_meta(meta)
    _, body = unpack_header(blob, AGGREGATE_MAGIC)
    _, codec = _split(body, spec, InvalidUpdate)
    return _plain_part(codec, spec, InvalidUpdate).astype(np.int64), spec.rows.copy()


IPHE = PaillierRowsScheme("paillier-iphe", "top", packed=True)
UPHE = PaillierRowsScheme("paillier-uphe", "bottom", packed=True)
PACKED = PaillierRowsScheme("paillier-packed", "all", packed=True)
