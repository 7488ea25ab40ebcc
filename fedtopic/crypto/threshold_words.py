"""Words that only a threshold of holders can reveal: the private vocabulary's keys, buckets and Shamir shares.

The consortium's vocabulary secret (made by the launching party and sealed for every party, as the mask secret is;
the aggregator never holds it) gives three keys (HKDF-SHA256, bound to the alignment's session):

- ``bucket``: HMAC-SHA256(k, word) mod M, the word's cell in the noisy count of the first stage;
- ``tag``: HMAC-SHA256(k, word)[:16], the word's name in the second stage, the same at every holder;
- ``seal``: with the word's own secret s_w, the AES-256-GCM key of the word.

Each holder of word w sends a point (x, f_w(x)) of the polynomial f_w(X) = s_w + a_1 X + … + a_{t−1} X^{t−1} over
GF(2^127 − 1), whose coefficients every holder derives alike from the word (HMAC of the polynomial key), and whose x
comes from the holder's own secret (so that other parties cannot tell who held a word). t points give s_w by
Lagrange interpolation at 0 (Shamir 1979); fewer give nothing about it. The word is sealed under HKDF(seal key,
s_w): a party learns a word only when t holders sent it (the aggregator passes on only such tags, and even if it
passed on more, fewer than t points open nothing); the aggregator, without the vocabulary secret, opens no word
even from t points. This is the threshold reveal of STAR (Davidson et al. 2022, "STAR: Secret Sharing for Private
Threshold Aggregation Reporting"), with the randomness server replaced by the consortium's shared key.

One opaque ``DecryptionError`` for every way a revealed word fails to open.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from fedtopic.crypto.errors import DecryptionError
from fedtopic.crypto.word_records import (
    PRIME,
    TAG_BYTES,
    WORD_BYTES,
    RevealedWord,
    ShareRecord,
)

MAX_WORD_BYTES = WORD_BYTES - 1
"""The longest word (UTF-8 bytes) the private alignment carries; longer ones stay out of it (and are counted)."""


@dataclass(frozen=True)
class VocabularyKeys:
    """The keys derived from the consortium's vocabulary secret for one alignment session."""

    bucket: bytes = field(repr=False)
    tag: bytes = field(repr=False)
    poly: bytes = field(repr=False)
    seal: bytes = field(repr=False)


def vocabulary_keys(secret: bytes, session: str) -> VocabularyKeys:
    """The four keys of ``session`` from the consortium's secret (≥ 16 bytes)."""
    if len(secret) < 16:
        raise ValueError("the vocabulary secret must be at least 16 bytes")
    salt = hashlib.sha256(b"fedtopic/vocabulary/session\x00" + session.encode("utf-8")).digest()

    def derive(label: bytes) -> bytes:
        return HKDF(hashes.SHA256(), 32, salt=salt, info=b"fedtopic/vocabulary/" + label).derive(secret)

    return VocabularyKeys(derive(b"bucket"), derive(b"tag"), derive(b"poly"), derive(b"seal"))


def _mac(key: bytes, *parts: bytes) -> bytes:
    return hmac.new(key, b"\x00".join(parts), hashlib.sha256).digest()


def word_bucket(keys: VocabularyKeys, word: str, buckets: int) -> int:
    """The word's cell among ``buckets``."""
    return int.from_bytes(_mac(keys.bucket, word.encode("utf-8"))[:8], "big") % buckets


def word_tag(keys: VocabularyKeys, word: str) -> bytes:
    """The word's 16-byte tag."""
    return _mac(keys.tag, word.encode("utf-8"))[:TAG_BYTES]


def _field(key: bytes, *parts: bytes) -> int:
    return int.from_bytes(_mac(key, *parts), "big") % PRIME


def _coefficients(keys: VocabularyKeys, word: bytes, threshold: int) -> list[int]:
    """[s_w, a_1, …, a_{t−1}]: the same at every holder of the word."""
    return [_field(keys.poly, word, i.to_bytes(2, "big")) for i in range(threshold)]


def _evaluate(coefficients: Sequence[int], x: int) -> int:
    y = 0
    for a in reversed(coefficients):
        y = (y * x + a) % PRIME
    return y


def _aead(keys: VocabularyKeys, secret: int) -> AESGCM:
    key = HKDF(hashes.SHA256(), 32, salt=None, info=b"fedtopic/vocabulary/word").derive(
        keys.seal + secret.to_bytes(16, "big"))
    return AESGCM(key)


def _pad(word: bytes) -> bytes:
    return bytes([len(word)]) + word + bytes(WORD_BYTES - 1 - len(word))


def share_word(keys: VocabularyKeys, word: str, threshold: int, holder_secret: bytes) -> ShareRecord:
    """This holder's record of ``word`` for a reveal at ``threshold`` holders (ValueError if the word is longer
    than ``MAX_WORD_BYTES``)."""
    raw = word.encode("utf-8")
    if len(raw) > MAX_WORD_BYTES:
        raise ValueError(f"word of {len(raw)} bytes is longer than {MAX_WORD_BYTES}")
    coefficients = _coefficients(keys, raw, threshold)
    x = _field(holder_secret, b"fedtopic/vocabulary/x", raw) or 1
    tag = word_tag(keys, word)
    sealed = _aead(keys, coefficients[0]).encrypt(tag[:12], _pad(raw), tag)
    return ShareRecord(tag, x, _evaluate(coefficients, x), sealed)


def _interpolate_at_zero(points: Sequence[tuple[int, int]]) -> int:
    """f(0) of the polynomial of degree < len(points) through ``points`` (distinct x)."""
    total = 0
    for i, (xi, yi) in enumerate(points):
        num, den = 1, 1
        for j, (xj, _) in enumerate(points):
            if i != j:
                num = num * xj % PRIME
                den = den * (xj - xi) % PRIME
        total = (total + yi * num * pow(den, PRIME - 2, PRIME)) % PRIME
    return total


def reveal_word(keys: VocabularyKeys, revealed: RevealedWord) -> str:
    """The word of ``revealed`` (its points interpolated, its seal opened, its tag checked); DecryptionError, one
    message, whatever is wrong."""
    if len({x for x, _ in revealed.points}) != len(revealed.points):
        raise DecryptionError("a revealed word cannot be opened")
    secret = _interpolate_at_zero(revealed.points)
    try:
        padded = _aead(keys, secret).decrypt(revealed.tag[:12], revealed.sealed, revealed.tag)
        size = padded[0]
        if size > MAX_WORD_BYTES or any(padded[1 + size:]):
            raise ValueError
        word = padded[1:1 + size].decode("utf-8")
    except (InvalidTag, ValueError):
        raise DecryptionError("a revealed word cannot be opened") from None
    if word_tag(keys, word) != revealed.tag:
        raise DecryptionError("a revealed word cannot be opened")
    return word
