"""Secrets reach the parties sealed to their X25519 keys; the Paillier fast paths equal the reference maths."""

import math
from collections import Counter

import gmpy2
import pytest
from _protect_setup import PAILLIER, PARTY_KEYS
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.crypto.paillier import (
    decrypt_ints,
    encrypt_ints,
    generate_paillier_keys,
    private_key_to_bytes,
)
from fedtopic.crypto.protect import (
    ObfuscatorPool,
    decrypt_parallel,
    new_mask_secret,
    open_for_reader,
    receive_mask_secret,
    receive_paillier_secret,
    seal_for_reader,
    share_mask_secret,
    share_paillier_secret,
)
from fedtopic.crypto.protect.fastpaillier import obfuscators_for, residues_by_crt
from fedtopic.crypto.protect.mask import secret_commitment
from fedtopic.errors import CryptoError, DecryptionError

READERS = {k.party_id: k.x25519_public for k in PARTY_KEYS[1:3]}


def test_paillier_secret_reaches_each_party_and_only_it():
    sealed = share_paillier_secret(PAILLIER.private, READERS, session="s1")
    assert set(sealed) == {"p1", "p2"}
    for key in PARTY_KEYS[1:3]:
        got = receive_paillier_secret(sealed[key.party_id], key.x25519_private_key, session="s1",
                                      public=PAILLIER.public)  # fmt: skip
        assert (got.p, got.q) == (PAILLIER.private.p, PAILLIER.private.q)
        assert private_key_to_bytes(PAILLIER.private) not in sealed[key.party_id]
    with pytest.raises(DecryptionError):  # p2's copy is useless to p1 (and to the aggregator)
        receive_paillier_secret(sealed["p2"], PARTY_KEYS[1].x25519_private_key, session="s1", public=PAILLIER.public)
    with pytest.raises(DecryptionError):  # bound to the session
        receive_paillier_secret(sealed["p1"], PARTY_KEYS[1].x25519_private_key, session="s2", public=PAILLIER.public)
    other = generate_paillier_keys(1024)
    with pytest.raises(CryptoError, match="does not match"):
        receive_paillier_secret(sealed["p1"], PARTY_KEYS[1].x25519_private_key, session="s1", public=other.public)


def test_mask_secret_is_checked_against_the_public_commitment():
    secret = new_mask_secret()
    sealed = share_mask_secret(secret, READERS, session="s1")
    key = PARTY_KEYS[2]
    assert receive_mask_secret(sealed["p2"], key.x25519_private_key, session="s1",
                               commitment=secret_commitment(secret)) == secret  # fmt: skip
    with pytest.raises(CryptoError, match="commitment"):
        receive_mask_secret(sealed["p2"], key.x25519_private_key, session="s1", commitment=secret_commitment(b"x" * 32))


@settings(max_examples=30, deadline=None)
@given(data=st.binary(max_size=300), flip=st.integers(0, 10_000))
def test_seal_round_trip_and_tamper_detection(data, flip):
    key = PARTY_KEYS[0]
    sealed = seal_for_reader(data, key.x25519_public, purpose="t", context=b"c")
    assert open_for_reader(sealed, key.x25519_private_key, purpose="t", context=b"c") == data
    with pytest.raises(DecryptionError):
        open_for_reader(sealed, key.x25519_private_key, purpose="u", context=b"c")
    bad = bytearray(sealed)
    bad[flip % len(bad)] ^= 1
    with pytest.raises(DecryptionError):
        open_for_reader(bytes(bad), key.x25519_private_key, purpose="t", context=b"c")


def test_obfuscators_of_given_r_are_the_textbook_ones():
    n, nsquare = PAILLIER.public.n, PAILLIER.public.nsquare
    rs = [2, 3, 12345, n - 2, 2**700 + 1]
    textbook = [int(gmpy2.powmod(r, n, nsquare)) for r in rs]
    assert obfuscators_for(rs, PAILLIER.public) == textbook


@pytest.mark.parametrize("p, q", [(7, 3), (3, 7), (11, 5), (13, 7), (23, 11), (31, 29)])
def test_crt_residues_have_exactly_the_textbook_distribution(p, q):
    """Every (t_p, t_q) against every r in Z*_n: the same multiset of obfuscators (gcd(q, p−1) > 1 in most pairs,
    where t^p alone would reach residues r^n never does)."""
    n, n2 = p * q, (p * q) ** 2
    textbook = Counter(pow(r, n, n2) for r in range(1, n) if math.gcd(r, n) == 1)
    ours = Counter(residues_by_crt([tp for tp in range(1, p) for _ in range(1, q)],
                                   [tq for _ in range(1, p) for tq in range(1, q)], p, q))
    assert ours == textbook


def test_pool_hands_out_fresh_valid_obfuscators():
    with ObfuscatorPool(PAILLIER.public, PAILLIER.private, workers=2, batch=7) as pool:
        pool.prefill(20)
        first, second = pool.take(15), pool.take(30)  # the second needs more than was queued
    assert len(set(first + second)) == 45
    values = list(range(45))
    cts = encrypt_ints(PAILLIER.public, values, obfuscators=first + second)
    assert decrypt_ints(PAILLIER.private, cts) == values
    phi = (PAILLIER.private.p - 1) * (PAILLIER.private.q - 1)  # n-th residues: the subgroup of order φ(n)
    assert all(pow(x, phi, PAILLIER.public.nsquare) == 1 for x in first + second)


def test_pool_refuses_a_foreign_private_key():
    other = generate_paillier_keys(1024)
    with pytest.raises(CryptoError, match="does not belong"):
        ObfuscatorPool(PAILLIER.public, other.private)


@pytest.mark.parametrize("workers", [1, 3])
def test_parallel_decryption_equals_phe(workers):
    values = [0, 1, 2**100, PAILLIER.public.n - 1] + list(range(20))
    cts = encrypt_ints(PAILLIER.public, values)
    assert decrypt_parallel(PAILLIER.private, cts, workers=workers) == values
    with pytest.raises(CryptoError, match="out of range"):
        decrypt_parallel(PAILLIER.private, [0])
