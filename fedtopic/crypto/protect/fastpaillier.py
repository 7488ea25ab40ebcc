"""Paillier at the scale of a whole V x K matrix: obfuscators computed ahead in a background pool, on all cores.

Encryption is (1 + n m) * r^n mod n^2 (``paillier.encrypt_ints``); the cost is
the obfuscator r^n mod n^2, which does not depend on m. ``ObfuscatorPool``
computes obfuscators in worker threads while the party runs its Gibbs sweep,
and ``encrypt_ints`` then only multiplies. gmpy2's ``powmod_base_list``
releases the GIL, so threads use every core without pickling big integers.

A party that holds the secret key (every CSFed party does, paper §6.1) draws the
obfuscator by CRT over p^2 and q^2 with half the exponent (``residues_by_crt``):
the same distribution as r^n mod n^2 for uniform r, at about a quarter of
textbook r^n's time (half of CRT r^n's). Decryption is also batched over the
workers.
"""

from __future__ import annotations

import math
import os
import secrets
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import gmpy2

from fedtopic.crypto.paillier import PaillierPrivateKey, PaillierPublicKey
from fedtopic.errors import CryptoError

DEFAULT_BATCH = 128


def default_workers() -> int:
    """Cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def obfuscators_for(rs: Sequence[int], public: PaillierPublicKey) -> list[int]:
    """r^n mod n^2 for each r in Z_n^* of ``rs`` (a party without the secret key; with it, ``residues_by_crt``)."""
    n = gmpy2.mpz(public.n)
    return [int(x) for x in gmpy2.powmod_base_list([gmpy2.mpz(r) for r in rs], n, n * n)]


def crt_exponents(p: int, q: int) -> tuple[int, int]:
    """(p·gcd(q, p−1), q·gcd(p, q−1)): the exponents of ``residues_by_crt``.

    r^n mod p^2 depends only on t = r mod p ((t + kp)^n ≡ t^n, as p^2 | np). Z*_{p^2} ≅ C_p × C_{p−1} and t^p is
    t's C_{p−1} part ω(t), a bijection of Z*_p onto C_{p−1}; so r^n = ω(t)^q is uniform on the image of x ↦ x^q on
    the cyclic C_{p−1}, its subgroup of d-th powers, d = gcd(q, p−1), which x ↦ x^d maps uniform x onto as well:
    t^(p·d) mod p^2 has the distribution of r^n mod p^2, with a (log p + log d)-bit exponent instead of n's. By CRT
    (r mod p and r mod q independent and uniform) the same holds mod n^2."""
    return p * math.gcd(q, p - 1), q * math.gcd(p, q - 1)


def residues_by_crt(tps: Sequence[int], tqs: Sequence[int], p: int, q: int) -> list[int]:
    """The obfuscators (n-th residues mod n^2) of t_p in Z*_p and t_q in Z*_q (``crt_exponents``): uniform t's give
    the distribution of r^n mod n^2 for uniform r in Z*_n."""
    ep, eq = crt_exponents(p, q)
    p2, q2 = gmpy2.mpz(p) ** 2, gmpy2.mpz(q) ** 2
    xp = gmpy2.powmod_base_list([gmpy2.mpz(t) for t in tps], ep, p2)
    xq = gmpy2.powmod_base_list([gmpy2.mpz(t) for t in tqs], eq, q2)
    q2_inv = gmpy2.invert(q2, p2)
    return [int(b + q2 * ((a - b) * q2_inv % p2)) for a, b in zip(xp, xq)]


def _fresh_obfuscators(public: PaillierPublicKey, private: PaillierPrivateKey | None, count: int) -> list[int]:
    if private is not None:
        p, q = private.p, private.q
        return residues_by_crt([secrets.randbelow(p - 1) + 1 for _ in range(count)],
                               [secrets.randbelow(q - 1) + 1 for _ in range(count)], p, q)
    n = public.n
    rs: list[int] = []
    while len(rs) < count:
        r = secrets.randbelow(n - 1) + 1
        if math.gcd(r, n) == 1:  # fails only if r reveals a factor of n: probability ~2^-1000
            rs.append(r)
    return obfuscators_for(rs, public)


class ObfuscatorPool:
    """Precomputes Paillier obfuscators r^n mod n^2 in background threads (start it early, ``prefill``, ``take``).

    Each obfuscator is handed out once. ``take`` first uses finished ones, then
    waits for queued batches, then computes any shortfall across all workers.
    Use as a context manager or call ``close``.
    """

    def __init__(self, public: PaillierPublicKey, private: PaillierPrivateKey | None = None, *,
                 workers: int | None = None, batch: int = DEFAULT_BATCH) -> None:  # fmt: skip
        if private is not None and private.public_key.n != public.n:
            raise CryptoError("obfuscator pool: the private key does not belong to the public key")
        if batch < 1:
            raise CryptoError("obfuscator pool: batch must be >= 1")
        self.public, self._private = public, private
        self.workers = workers or default_workers()
        self.batch = batch
        self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="paillier-obfuscators")
        self._ready: list[int] = []
        self._pending: deque[Future[list[int]]] = deque()
        self._lock = threading.Lock()

    def _submit(self, count: int) -> list[Future[list[int]]]:
        sizes = [self.batch] * (count // self.batch) + ([count % self.batch] if count % self.batch else [])
        return [self._executor.submit(_fresh_obfuscators, self.public, self._private, s) for s in sizes]

    def prefill(self, count: int) -> None:
        """Queue ``count`` more obfuscators to be computed in the background (returns at once)."""
        with self._lock:
            self._pending.extend(self._submit(count))

    @property
    def available(self) -> int:
        """Obfuscators finished and not yet taken."""
        with self._lock:
            return len(self._ready) + sum(len(f.result()) for f in self._pending if f.done())

    def take(self, count: int) -> list[int]:
        """``count`` unused obfuscators (blocks until they exist; the shortfall is computed on all workers)."""
        with self._lock:
            while len(self._ready) < count and self._pending:
                self._ready.extend(self._pending.popleft().result())
            short = count - len(self._ready)
            if short > 0:
                per_worker = -(-short // self.workers)
                futures = [self._executor.submit(_fresh_obfuscators, self.public, self._private,
                                                 min(per_worker, short - i * per_worker))
                           for i in range(self.workers) if short - i * per_worker > 0]  # fmt: skip
                for f in futures:
                    self._ready.extend(f.result())
            out, self._ready = self._ready[:count], self._ready[count:]
            return out

    def close(self) -> None:
        """Stop the workers (queued batches are cancelled)."""
        self._executor.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> ObfuscatorPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _decrypt_chunk(private: PaillierPrivateKey, cts: Sequence[int]) -> list[int]:
    """phe's CRT decryption (raw_decrypt), batched: L(c^(p-1) mod p^2) * hp mod p, same for q, then CRT."""
    p, q = gmpy2.mpz(private.p), gmpy2.mpz(private.q)
    bases = [gmpy2.mpz(c) for c in cts]
    cp = gmpy2.powmod_base_list(bases, p - 1, p * p)
    cq = gmpy2.powmod_base_list(bases, q - 1, q * q)
    hp, hq, p_inv = gmpy2.mpz(private.hp), gmpy2.mpz(private.hq), gmpy2.mpz(private.p_inverse)
    out = []
    for a, b in zip(cp, cq):
        mp = (a - 1) // p * hp % p
        mq = (b - 1) // q * hq % q
        out.append(int(mp + (mq - mp) * p_inv % q * p))
    return out


def decrypt_parallel(private: PaillierPrivateKey, ciphertexts: Sequence[int], *,
                     workers: int | None = None) -> list[int]:
    """Plaintexts of raw ciphertexts in (0, n^2), decrypted in ``workers`` threads (default: all cores)."""
    nsquare = private.public_key.nsquare
    for c in ciphertexts:
        if not isinstance(c, int) or not 0 < c < nsquare:
            raise CryptoError("Paillier ciphertext out of range (0, n^2)")
    workers = workers or default_workers()
    if workers == 1 or len(ciphertexts) < 2 * workers:
        return _decrypt_chunk(private, ciphertexts)
    step = -(-len(ciphertexts) // workers)
    with ThreadPoolExecutor(workers) as ex:
        parts = list(ex.map(lambda i: _decrypt_chunk(private, ciphertexts[i:i + step]),
                            range(0, len(ciphertexts), step)))  # fmt: skip
    return [m for part in parts for m in part]
