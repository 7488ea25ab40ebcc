"""The aggregator's witness book (`network.witness_book`) on a real store: it keeps a member's witness only when it
is the member's signature of the aggregates it holds, answers the witnesses overlapping a span, and refuses what
would let one member stop the others (a false digest, a forged signature, a second story for one span)."""

from __future__ import annotations

import pytest
from eth_account import Account

from fedtopic.crypto.witness import MAX_SPAN, Witness, sign_witness
from fedtopic.network.errors import Rejection
from fedtopic.network.store import Store
from fedtopic.network.wire import sha256_hex
from fedtopic.network.witness_book import WitnessBook

KEYS = {p: bytes([i + 7]) * 32 for i, p in enumerate(("p1", "p2"))}
MEMBERS = {p: Account.from_key(k).address for p, k in KEYS.items()}
SID = "run-dense"


@pytest.fixture
def book(tmp_path):
    store = Store(tmp_path / "agg")
    store.create_session(SID, {"parties": list(MEMBERS)}, "p1", 0.0)
    for rnd in range(6):
        blob = f"aggregate {rnd}".encode()
        store.close_round(SID, rnd, 1.0 + rnd, "complete", blob, sha256_hex(blob), ("p1", "p2"), ())
    yield WitnessBook(store, MEMBERS)
    store.close()


def _digests(first: int, last: int) -> list[str]:
    return [sha256_hex(f"aggregate {r}".encode()) for r in range(first, last + 1)]


def _w(party: str, first: int, digests: list[str], key: str | None = None) -> Witness:
    return Witness(party, first, tuple(digests), sign_witness(KEYS[key or party], SID, first, digests))


def test_true_witnesses_are_kept_once_and_answered_by_overlap(book):
    book.post(SID, 6, _w("p1", 0, _digests(0, 3)))
    book.post(SID, 6, _w("p1", 0, _digests(0, 3)))  # the same again (a retried request): a no-op
    book.post(SID, 6, _w("p2", 2, _digests(2, 5)))
    assert [(w.party, w.first, w.last) for w in book.overlapping(SID, 3, 3)] == [("p1", 0, 3), ("p2", 2, 5)]
    assert [(w.party, w.first) for w in book.overlapping(SID, 4, 5)] == [("p2", 2)]
    assert book.overlapping(SID, 6, 9) == []


@pytest.mark.parametrize(("witness", "status", "code"), [
    (lambda: _w("p1", 0, _digests(0, 2)[:2] + ["0" * 64]), 422, "wrong_witness"),  # not what it served
    (lambda: _w("p1", 0, _digests(0, 2), key="p2"), 422, "invalid_witness"),  # another member's key
    (lambda: _w("p1", 4, _digests(4, 5) + ["0" * 64]), 409, "round_not_closed"),  # round 6 is open
    (lambda: _w("p1", 0, [_digests(0, 0)[0]] * (MAX_SPAN + 1)), 422, "invalid_witness"),
])
def test_a_witness_that_is_not_true_is_refused_and_nothing_is_kept(book, witness, status, code):
    with pytest.raises(Rejection) as caught:
        book.post(SID, 6, witness())
    assert (caught.value.status, caught.value.code) == (status, code)
    assert book.overlapping(SID, 0, 9) == []


def test_a_second_story_for_one_span_end_is_a_conflict(book):
    book.post(SID, 6, _w("p1", 0, _digests(0, 3)))
    with pytest.raises(Rejection) as caught:
        book.post(SID, 6, _w("p1", 2, _digests(2, 3)))
    assert caught.value.code == "witness_conflict"
