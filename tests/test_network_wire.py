"""Signed wire messages and their server-side verification (auth), without a server."""

from __future__ import annotations

import time

import pytest
from eth_account import Account
from eth_account.messages import encode_defunct
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.crypto.keys import generate_party_keys
from fedtopic.network.auth import (
    NonceGuard,
    check_request_headers,
    check_update_headers,
)
from fedtopic.network.errors import Rejection
from fedtopic.network.wire import (
    H_NONCE,
    H_PARTY,
    H_SIGNATURE,
    H_TIMESTAMP,
    recover_signer,
    request_headers,
    request_message,
    sha256_hex,
    sign_text,
    update_headers,
    update_message,
)

_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141  # secp256k1's group order
ALICE = generate_party_keys("alice", seed=b"wire")
BOB = generate_party_keys("bob", seed=b"wire")
PARTIES = {"alice": ALICE.address, "bob": BOB.address}


def verify_update(parties, party, signature, session, round, payload):
    return check_update_headers(parties, party, signature, session, round, sha256_hex(payload))


def verify_request(parties, guard, party, signature, timestamp, nonce, method, path, body):
    return check_request_headers(parties, guard, party, signature, timestamp, nonce, method, path, sha256_hex(body))


def test_sign_recover_and_canonical_update_message() -> None:
    text = update_message("s1", 3, "alice", "ab" * 32, "wait=5.000")
    assert text == f"fedtopic-update/v2\nsession=s1\nround=3\nparty=alice\nsha256={'ab' * 32}\nquery=wait=5.000"
    sig = sign_text(text, ALICE.eth_private_key)
    assert recover_signer(text, sig) == ALICE.address
    assert recover_signer(text + "x", sig) != ALICE.address
    assert recover_signer(text, "0xdeadbeef") is None


def test_only_the_canonical_signature_is_accepted() -> None:
    """One request, one signature: the high-s twin with the flipped v, v as 0/1, upper-case hex and a 0X prefix
    all recover the same key mathematically, and all are refused."""
    text = request_message("GET", "/v1/sessions/s?wait=1.000", "alice", 1, "ab" * 16, "cd" * 32)
    sig = sign_text(text, ALICE.eth_private_key)
    assert recover_signer(text, sig) == ALICE.address
    rsv = bytes.fromhex(sig[2:])
    r, s, v = rsv[:32], int.from_bytes(rsv[32:64], "big"), rsv[64]
    high = "0x" + (r + (_ORDER - s).to_bytes(32, "big") + bytes([55 - v])).hex()  # the same point, mirrored
    assert Account.recover_message(encode_defunct(text=text), signature=high) == ALICE.address  # valid math
    for variant in (high, "0x" + (rsv[:64] + bytes([v - 27])).hex(), sig.upper().replace("0X", "0x"),
                    "0X" + sig[2:], sig[2:]):
        assert recover_signer(text, variant) is None, variant


@settings(max_examples=60, deadline=None)
@given(secret=st.binary(min_size=32, max_size=32).filter(lambda b: 0 < int.from_bytes(b, "big") < _ORDER),
       text=st.text(max_size=300))
def test_signatures_are_eth_accounts_byte_for_byte(secret: bytes, text: str) -> None:
    """The coincurve path signs and recovers exactly as eth-account's ``sign_message`` / ``recover_message``."""
    ours = sign_text(text, secret)
    theirs = Account.sign_message(encode_defunct(text=text), private_key=secret)
    assert ours == "0x" + bytes(theirs.signature).hex()
    assert recover_signer(text, ours) == Account.recover_message(encode_defunct(text=text), signature=ours) == \
        Account.from_key(secret).address


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(min_size=0, max_size=70), v=st.sampled_from([0, 1, 27, 28, 29, 35, 255]))
def test_recovery_of_garbage_is_none_or_eth_accounts_answer(raw: bytes, v: int) -> None:
    """Malformed signatures (any length, r or s out of range, odd v) give None, never an exception; where
    eth-account recovers an address from the same bytes we recover the same one."""
    text = "fedtopic-request/v1"
    sig = "0x" + (raw[:64] + bytes([v]) if len(raw) >= 64 else raw).hex()
    got = recover_signer(text, sig)
    try:
        want = Account.recover_message(encode_defunct(text=text), signature=sig)
    except Exception:  # eth-account raises several types for garbage
        want = None
    assert got == want


def test_update_signature_binds_session_round_party_and_payload() -> None:
    h = update_headers(ALICE, "s1", 2, b"payload")
    ok = (h[H_PARTY], h[H_SIGNATURE])
    assert verify_update(PARTIES, *ok, "s1", 2, b"payload") == "alice"
    for session, rnd, payload in (("s2", 2, b"payload"), ("s1", 3, b"payload"), ("s1", 2, b"payloaD")):
        with pytest.raises(Rejection) as exc:
            verify_update(PARTIES, *ok, session, rnd, payload)
        assert (exc.value.status, exc.value.code) == (401, "bad_signature")
    with pytest.raises(Rejection) as exc:  # bob claims alice's signature
        verify_update(PARTIES, "bob", h[H_SIGNATURE], "s1", 2, b"payload")
    assert exc.value.code == "bad_signature"
    with pytest.raises(Rejection) as exc:
        verify_update(PARTIES, "mallory", h[H_SIGNATURE], "s1", 2, b"payload")
    assert exc.value.code == "unknown_party"
    with pytest.raises(Rejection) as exc:
        verify_update(PARTIES, None, None, "s1", 2, b"payload")
    assert exc.value.code == "unsigned"


def test_request_signature_nonce_and_clock_window(tmp_path) -> None:
    from fedtopic.network.store import Store

    store = Store(tmp_path / "agg")
    guard = NonceGuard(window_seconds=60, store=store)
    h = request_headers(BOB, "GET", "/v1/sessions/s1")
    args = (h[H_PARTY], h[H_SIGNATURE], h[H_TIMESTAMP], h[H_NONCE])
    with pytest.raises(Rejection) as exc:  # path is bound
        verify_request(PARTIES, guard, *args, "GET", "/v1/sessions/s2", b"")
    assert exc.value.code == "bad_signature"
    assert verify_request(PARTIES, guard, *args, "GET", "/v1/sessions/s1", b"") == "bob"
    with pytest.raises(Rejection) as exc:
        verify_request(PARTIES, guard, *args, "GET", "/v1/sessions/s1", b"")
    assert (exc.value.status, exc.value.code) == (409, "replayed_request")
    with pytest.raises(Rejection) as exc:
        guard.check(int(time.time()) - 120, "0" * 32)
    assert exc.value.code == "stale_request"
    with pytest.raises(Rejection) as exc:
        verify_request(PARTIES, guard, "bob", h[H_SIGNATURE], "12x", h[H_NONCE], "GET", "/", b"")
    assert exc.value.code == "stale_request"
    store.close()
    reopened = NonceGuard(window_seconds=60, store=Store(tmp_path / "agg"))  # a restarted aggregator remembers
    with pytest.raises(Rejection) as exc:
        verify_request(PARTIES, reopened, *args, "GET", "/v1/sessions/s1", b"")
    assert exc.value.code == "replayed_request"


def test_signatures_run_on_libsecp256k1_not_the_pure_python_backend():
    from eth_keys import KeyAPI

    assert type(KeyAPI().backend).__name__ == "CoinCurveECCBackend"  # 0.1 ms per recovery instead of ~4 ms
