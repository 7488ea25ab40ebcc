"""Paillier: explicit key size, exact round-trips, the additive homomorphism, wire forms."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.crypto.paillier import (
    ciphertext_bytes,
    ciphertexts_from_bytes,
    ciphertexts_to_bytes,
    decrypt_ints,
    decrypt_vector,
    encrypt_ints,
    encrypt_vector,
    generate_paillier_keys,
    plaintext_bits,
    private_key_from_bytes,
    private_key_to_bytes,
    public_key_from_hex,
    public_key_to_hex,
    random_obfuscators,
    sum_ciphertexts,
)
from fedtopic.errors import CryptoError

PUB, PRIV = generate_paillier_keys(1024)  # smallest allowed size keeps the tests fast


def test_key_size_is_explicit_and_checked():
    pub, _ = generate_paillier_keys(1280)
    assert pub.n.bit_length() == 1280 and plaintext_bits(pub) == 1279
    for bad in (512, 1000, 9216, True, "2048"):
        with pytest.raises(CryptoError, match="multiple of 256"):
            generate_paillier_keys(bad)


def test_encryption_is_randomised_and_decrypts():
    a, b = encrypt_ints(PUB, [42, 42])
    assert a != b
    assert decrypt_ints(PRIV, [a, b]) == [42, 42]
    assert decrypt_ints(PRIV, encrypt_ints(PUB, [0, PUB.n - 1])) == [0, PUB.n - 1]


def test_homomorphic_sum_matches_plain_sum():
    rng = np.random.default_rng(3)
    vectors = rng.integers(0, 10_000, size=(5, 12))
    total = sum_ciphertexts(PUB, [encrypt_vector(PUB, v) for v in vectors])
    np.testing.assert_array_equal(decrypt_vector(PRIV, total), vectors.sum(axis=0))


def test_precomputed_obfuscators_are_used():
    obf = random_obfuscators(PUB, 3)
    c1 = encrypt_ints(PUB, [1, 2, 3], obfuscators=obf)
    assert c1 == encrypt_ints(PUB, [1, 2, 3], obfuscators=obf)
    assert decrypt_ints(PRIV, c1) == [1, 2, 3]
    with pytest.raises(CryptoError, match="2 obfuscators for 3 plaintexts"):
        encrypt_ints(PUB, [1, 2, 3], obfuscators=obf[:2])


def test_bad_inputs():
    with pytest.raises(CryptoError, match=r"\[0, n\)"):
        encrypt_ints(PUB, [-1])
    with pytest.raises(CryptoError, match=r"\[0, n\)"):
        encrypt_ints(PUB, [PUB.n])
    with pytest.raises(CryptoError, match="non-negative"):
        encrypt_vector(PUB, np.array([1, -1]))
    with pytest.raises(CryptoError, match="1-D integer"):
        encrypt_vector(PUB, np.ones((2, 2), dtype=int))
    with pytest.raises(CryptoError, match="out of range"):
        decrypt_ints(PRIV, [PUB.nsquare])
    with pytest.raises(CryptoError, match="differ in length"):
        sum_ciphertexts(PUB, [encrypt_ints(PUB, [1]), encrypt_ints(PUB, [1, 2])])
    with pytest.raises(CryptoError, match="nothing to sum"):
        sum_ciphertexts(PUB, [])


def test_wrong_private_key_gives_garbage_not_plaintext():
    _, other = generate_paillier_keys(1024)
    cts = encrypt_ints(PUB, [5] * 8)
    try:
        plain = decrypt_ints(other, cts)
    except CryptoError:  # some ciphertexts lie outside the other key's range
        return
    assert all(p != 5 for p in plain)


def test_wire_forms_roundtrip_and_reject_garbage():
    cts = encrypt_ints(PUB, [7, 8, 9])
    data = ciphertexts_to_bytes(PUB, cts)
    assert len(data) == 3 * ciphertext_bytes(PUB) == 3 * 256
    assert ciphertexts_from_bytes(PUB, data) == cts
    with pytest.raises(CryptoError, match="not a multiple"):
        ciphertexts_from_bytes(PUB, data[:-1])
    with pytest.raises(CryptoError, match="out of range"):
        ciphertexts_from_bytes(PUB, b"\xff" * ciphertext_bytes(PUB))
    assert public_key_from_hex(public_key_to_hex(PUB)) == PUB
    restored = private_key_from_bytes(private_key_to_bytes(PRIV))
    assert restored.public_key == PUB and decrypt_ints(restored, cts) == [7, 8, 9]
    with pytest.raises(CryptoError, match="truncated"):
        private_key_from_bytes(private_key_to_bytes(PRIV)[:-1])
    with pytest.raises(CryptoError, match="two distinct primes"):
        private_key_from_bytes(private_key_to_bytes(PRIV) + b"\0")
    with pytest.raises(CryptoError, match="hex modulus"):
        public_key_from_hex("xyz")


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**40), min_size=4, max_size=4), min_size=1, max_size=4))
def test_sum_roundtrip_property(vectors):
    total = sum_ciphertexts(PUB, [encrypt_ints(PUB, v) for v in vectors])
    assert decrypt_ints(PRIV, total) == [sum(col) for col in zip(*vectors)]
