"""Witnesses of aggregates (`crypto.witness`, `network.client.check_witnesses`): a signature verifies for its
member's address and statement only; the check names the round and what is wrong, compares spans that start at
different rounds round by round, and passes an honest set."""

from __future__ import annotations

import pytest
from eth_account import Account
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.crypto.witness import MAX_SPAN, Witness, sign_witness, witness_signed_by
from fedtopic.errors import AggregatorMisbehaved
from fedtopic.network.client import check_witnesses

KEYS = {p: bytes([i + 1]) * 32 for i, p in enumerate(("p1", "p2", "p3"))}
ROSTER = {p: Account.from_key(k).address for p, k in KEYS.items()}
D, E = "ab" * 32, "cd" * 32
HEX = st.text("0123456789abcdef", min_size=64, max_size=64)


def _w(party: str, first: int, digests: list[str], session: str = "s-counts") -> Witness:
    return Witness(party, first, tuple(digests), sign_witness(KEYS[party], session, first, digests))


@settings(max_examples=30, deadline=None)
@given(first=st.integers(0, 2**31), other=st.integers(0, 2**31), digests=st.lists(HEX, min_size=1, max_size=5),
       flip=st.integers(0, 4))
def test_a_witness_verifies_for_its_statement_only(first, other, digests, flip):
    w = _w("p1", first, digests, session="s")
    assert witness_signed_by(ROSTER["p1"], "s", w)
    assert not witness_signed_by(ROSTER["p2"], "s", w)
    assert not witness_signed_by(ROSTER["p1"], "t", w)
    if other != first:  # the same digests claimed for other rounds
        assert not witness_signed_by(ROSTER["p1"], "s", Witness("p1", other, w.digests, w.signature))
    i = flip % len(digests)
    changed = list(digests)
    changed[i] = "0" * 64 if changed[i] != "0" * 64 else "1" * 64
    assert not witness_signed_by(ROSTER["p1"], "s", Witness("p1", first, tuple(changed), w.signature))
    if len(digests) > 1:  # a span cut short
        assert not witness_signed_by(ROSTER["p1"], "s", Witness("p1", first, w.digests[:-1], w.signature))


def test_a_witness_longer_than_its_bound_or_malformed_is_no_witness():
    long = _w("p1", 0, [D] * (MAX_SPAN + 1))
    assert not witness_signed_by(ROSTER["p1"], "s-counts", long)
    assert not witness_signed_by(ROSTER["p1"], "s-counts", Witness("p1", 0, ("AB" * 32,), _w("p1", 0, [D]).signature))
    assert not witness_signed_by(ROSTER["p1"], "s-counts", Witness("p1", 0, (D,), "0x12"))


def test_an_honest_set_passes_and_each_fault_is_named():
    mine = _w("p1", 4, [D])
    check_witnesses("s-counts", "p1", mine, [mine, _w("p2", 4, [D]), _w("p3", 4, [D])], ROSTER, required=["p2", "p3"])
    with pytest.raises(AggregatorMisbehaved, match=r"round 4 .* differs from the one p3 received"):
        check_witnesses("s-counts", "p1", mine, [_w("p2", 4, [D]), _w("p3", 4, [E])], ROSTER, required=["p2"])
    with pytest.raises(AggregatorMisbehaved, match=r"round 4 .* no witness of its aggregate for p3"):
        check_witnesses("s-counts", "p1", mine, [_w("p2", 4, [D])], ROSTER, required=["p2", "p3"])
    forged = Witness("p3", 4, (D,), sign_witness(KEYS["p2"], "s-counts", 4, [D]))  # p2's key, p3's name
    with pytest.raises(AggregatorMisbehaved, match="witness for 'p3' that 'p3' did not sign"):
        check_witnesses("s-counts", "p1", mine, [forged], ROSTER, required=[])
    older = _w("p2", 3, [D])  # a witness of another round, served as this one's
    with pytest.raises(AggregatorMisbehaved, match="did not sign"):
        check_witnesses("s-counts", "p1", mine, [Witness("p2", 4, older.digests, older.signature)], ROSTER,
                        required=[])


def test_spans_compare_round_by_round_where_they_overlap():
    """p1 witnessed rounds 32-63; p2 resumed at 40 and witnessed 40-63; p3's span 0-31 does not overlap and is
    not compared. One changed digest in the overlap is named by its round; a span that stops before p1's last
    round does not count as that round's witness."""
    digests = [f"{i:064x}" for i in range(32, 64)]
    mine = _w("p1", 32, digests)
    check_witnesses("s-counts", "p1", mine, [_w("p2", 40, digests[8:]), _w("p3", 0, [E] * 32)], ROSTER,
                    required=["p2"])
    changed = digests[8:]
    changed[5] = E
    with pytest.raises(AggregatorMisbehaved, match=r"^p1: round 45 of session 's-counts': .* differs from the one p2"):
        check_witnesses("s-counts", "p1", mine, [_w("p2", 40, changed)], ROSTER, required=[])
    with pytest.raises(AggregatorMisbehaved, match=r"round 63 .* no witness of its aggregate for p2"):
        check_witnesses("s-counts", "p1", mine, [_w("p2", 40, digests[8:-1])], ROSTER, required=["p2"])
