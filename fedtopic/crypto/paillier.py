"""Paillier encryption of non-negative integer vectors (paper §6.3, Def. 3, Alg. 2: IPHE).

Thin, explicit layer over ``phe`` (gmpy2-accelerated): key generation with an
explicit size (default 2048 bits; phe's own default is 3072), raw encryption
of integers in [0, n) with g = n + 1, ciphertext addition (the homomorphism
Enc(a) * Enc(b) = Enc(a + b) mod n^2), CRT decryption, and fixed-width byte
forms of ciphertexts and keys for the wire. Packing many counts into one
plaintext is ``packing``'s job; this module only encrypts integers.

The expensive part of encryption is the obfuscator r^n mod n^2; it does not
depend on the plaintext, so ``random_obfuscators`` can precompute it (e.g. in
a background pool) and ``encrypt_ints`` consumes it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import gmpy2
import numpy as np
from phe import paillier

from fedtopic.errors import CryptoError

DEFAULT_KEY_BITS = 2048
MIN_KEY_BITS = 1024
MAX_KEY_BITS = 8192

PaillierPublicKey = paillier.PaillierPublicKey
PaillierPrivateKey = paillier.PaillierPrivateKey


class PaillierKeyPair(NamedTuple):
    """A Paillier key pair; unpacks as ``public, private``."""

    public: PaillierPublicKey
    private: PaillierPrivateKey


def generate_paillier_keys(bits: int = DEFAULT_KEY_BITS) -> PaillierKeyPair:
    """A fresh key pair whose modulus n has ``bits`` bits (a multiple of 256 in [1024, 8192])."""
    if isinstance(bits, bool) or not isinstance(bits, int) or not MIN_KEY_BITS <= bits <= MAX_KEY_BITS or bits % 256:
        raise CryptoError(f"Paillier key size must be a multiple of 256 in [{MIN_KEY_BITS}, {MAX_KEY_BITS}], got {bits!r}")
    public, private = paillier.generate_paillier_keypair(n_length=bits)
    return PaillierKeyPair(public, private)


def plaintext_bits(public: PaillierPublicKey) -> int:
    """Bits available for a plaintext: every integer below 2^plaintext_bits is < n."""
    return public.n.bit_length() - 1


def random_obfuscators(public: PaillierPublicKey, count: int) -> list[int]:
    """``count`` fresh values r^n mod n^2 with r uniform in Z_n^* (plaintext-independent, precomputable)."""
    n = gmpy2.mpz(public.n)
    nsquare = n * n
    out: list[int] = []
    while len(out) < count:
        r = secrets.randbelow(public.n - 1) + 1
        if gmpy2.gcd(r, n) == 1:  # fails only if r reveals a factor of n: probability ~2^-1000
            out.append(int(gmpy2.powmod(r, n, nsquare)))
    return out


def encrypt_ints(
    public: PaillierPublicKey, values: Iterable[int], *, obfuscators: Sequence[int] | None = None
) -> list[int]:
    """Raw ciphertexts of integers in [0, n): (1 + n m) * r^n mod n^2; fresh obfuscators unless given (one each)."""
    plain = [int(v) for v in values]
    n = gmpy2.mpz(public.n)
    nsquare = n * n
    for v in plain:
        if not 0 <= v < public.n:
            raise CryptoError("Paillier plaintext must be an integer in [0, n)")
    if obfuscators is None:
        obfuscators = random_obfuscators(public, len(plain))
    elif len(obfuscators) != len(plain):
        raise CryptoError(f"{len(obfuscators)} obfuscators for {len(plain)} plaintexts")
    return [int((n * m + 1) * gmpy2.mpz(obf) % nsquare) for m, obf in zip(plain, obfuscators)]


def _check_ciphertexts(public: PaillierPublicKey, ciphertexts: Sequence[int]) -> None:
    for c in ciphertexts:
        if not isinstance(c, int) or not 0 < c < public.nsquare:
            raise CryptoError("Paillier ciphertext out of range (0, n^2)")


def decrypt_ints(private: PaillierPrivateKey, ciphertexts: Sequence[int]) -> list[int]:
    """Plaintexts in [0, n) of raw ciphertexts (CRT decryption)."""
    _check_ciphertexts(private.public_key, ciphertexts)
    return [int(private.raw_decrypt(int(c))) for c in ciphertexts]


def sum_ciphertexts(public: PaillierPublicKey, vectors: Sequence[Sequence[int]]) -> list[int]:
    """Element-wise homomorphic sum of equally long ciphertext vectors: Enc(sum of plaintexts) mod n."""
    if not vectors:
        raise CryptoError("nothing to sum")
    length = len(vectors[0])
    if any(len(v) != length for v in vectors):
        raise CryptoError("ciphertext vectors to sum differ in length")
    nsquare = gmpy2.mpz(public.nsquare)
    total = [gmpy2.mpz(c) for c in vectors[0]]
    _check_ciphertexts(public, vectors[0])
    for vector in vectors[1:]:
        _check_ciphertexts(public, vector)
        total = [t * c % nsquare for t, c in zip(total, vector)]
    return [int(t) for t in total]


def encrypt_vector(public: PaillierPublicKey, values: np.ndarray) -> list[int]:
    """One ciphertext per entry of a non-negative integer vector, shape (n,)."""
    arr = np.asarray(values)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise CryptoError(f"expected a 1-D integer vector, got shape {arr.shape} dtype {arr.dtype}")
    if arr.size and arr.min() < 0:
        raise CryptoError("Paillier vector entries must be non-negative")
    return encrypt_ints(public, arr.tolist())


def decrypt_vector(private: PaillierPrivateKey, ciphertexts: Sequence[int]) -> np.ndarray:
    """Decrypt to an int64 vector, shape (n,); CryptoError if a plaintext does not fit int64 (overflowed sum)."""
    plain = decrypt_ints(private, ciphertexts)
    if any(p >= 2**63 for p in plain):
        raise CryptoError("decrypted value does not fit int64 (wrong key or overflowed sum)")
    return np.array(plain, dtype=np.int64)


def ciphertext_bytes(public: PaillierPublicKey) -> int:
    """Fixed width in bytes of one serialised ciphertext (an integer below n^2)."""
    return (public.nsquare.bit_length() + 7) // 8


def ciphertexts_to_bytes(public: PaillierPublicKey, ciphertexts: Sequence[int]) -> bytes:
    """Concatenated big-endian fixed-width ciphertexts."""
    _check_ciphertexts(public, ciphertexts)
    width = ciphertext_bytes(public)
    return b"".join(int(c).to_bytes(width, "big") for c in ciphertexts)


def ciphertexts_from_bytes(public: PaillierPublicKey, data: bytes) -> list[int]:
    """Inverse of ``ciphertexts_to_bytes``; CryptoError on a wrong length or an out-of-range ciphertext."""
    width = ciphertext_bytes(public)
    if len(data) % width:
        raise CryptoError(f"ciphertext bytes: length {len(data)} is not a multiple of {width}")
    out = [int.from_bytes(data[i : i + width], "big") for i in range(0, len(data), width)]
    _check_ciphertexts(public, out)
    return out


def public_key_to_hex(public: PaillierPublicKey) -> str:
    """The modulus n in hex: the whole public key (g = n + 1)."""
    return format(public.n, "x")


def public_key_from_hex(text: str) -> PaillierPublicKey:
    """Inverse of ``public_key_to_hex``."""
    try:
        n = int(text, 16)
    except (TypeError, ValueError):
        raise CryptoError("Paillier public key must be a hex modulus") from None
    if not MIN_KEY_BITS <= n.bit_length() <= MAX_KEY_BITS or n % 2 == 0:
        raise CryptoError(f"Paillier modulus of {n.bit_length()} bits is not a valid key")
    return PaillierPublicKey(n)


def private_key_to_bytes(private: PaillierPrivateKey) -> bytes:
    """p and q, each length-prefixed (for wrapping to the parties with ``envelope``; never to the aggregator)."""
    out = b""
    for prime in (private.p, private.q):
        raw = int(prime).to_bytes((int(prime).bit_length() + 7) // 8, "big")
        out += len(raw).to_bytes(2, "big") + raw
    return out


def private_key_from_bytes(data: bytes) -> PaillierPrivateKey:
    """Inverse of ``private_key_to_bytes``; CryptoError if the bytes are not two primes of a valid modulus."""
    primes, pos = [], 0
    for _ in range(2):
        if pos + 2 > len(data):
            raise CryptoError("Paillier private key bytes are truncated")
        size = int.from_bytes(data[pos : pos + 2], "big")
        if pos + 2 + size > len(data):
            raise CryptoError("Paillier private key bytes are truncated")
        primes.append(int.from_bytes(data[pos + 2 : pos + 2 + size], "big"))
        pos += 2 + size
    p, q = primes
    if pos != len(data) or p == q or not all(gmpy2.is_prime(x) for x in (p, q)):
        raise CryptoError("Paillier private key bytes do not hold two distinct primes")
    public = public_key_from_hex(format(p * q, "x"))
    return PaillierPrivateKey(public, p, q)
