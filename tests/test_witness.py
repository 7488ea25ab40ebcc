"""Witnesses of an aggregate (`crypto.witness`, `network.client.check_witnesses`): a signature verifies for its
member's address and statement only; the check names the round and what is wrong, and passes an honest set."""

from __future__ import annotations

import pytest
from eth_account import Account
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.crypto.witness import sign_witness, witness_signed_by
from fedtopic.errors import AggregatorMisbehaved
from fedtopic.network.client import check_witnesses

KEYS = {p: bytes([i + 1]) * 32 for i, p in enumerate(("p1", "p2", "p3"))}
ROSTER = {p: Account.from_key(k).address for p, k in KEYS.items()}
D = "ab" * 32


def _set(digests: dict[str, str], session: str = "s-counts", rnd: int = 4) -> dict[str, tuple[str, str]]:
    return {p: (d, sign_witness(KEYS[p], session, rnd, d)) for p, d in digests.items()}


@settings(max_examples=30, deadline=None)
@given(rnd=st.integers(0, 2**31), other=st.integers(0, 2**31), digest=st.text("0123456789abcdef", min_size=64,
                                                                                 max_size=64))
def test_a_witness_verifies_for_its_statement_only(rnd, other, digest):
    sig = sign_witness(KEYS["p1"], "s", rnd, digest)
    assert witness_signed_by(ROSTER["p1"], "s", rnd, digest, sig)
    assert not witness_signed_by(ROSTER["p2"], "s", rnd, digest, sig)
    assert not witness_signed_by(ROSTER["p1"], "t", rnd, digest, sig)
    if other != rnd:
        assert not witness_signed_by(ROSTER["p1"], "s", other, digest, sig)


def test_an_honest_set_passes_and_each_fault_is_named():
    check_witnesses("s-counts", "p1", 4, D, _set({"p1": D, "p2": D, "p3": D}), ROSTER, required=["p2", "p3"])
    with pytest.raises(AggregatorMisbehaved, match=r"round 4 .* differs from the one p3 received"):
        check_witnesses("s-counts", "p1", 4, D, _set({"p2": D, "p3": "cd" * 32}), ROSTER, required=["p2"])
    with pytest.raises(AggregatorMisbehaved, match=r"round 4 .* no witness of its aggregate for p3"):
        check_witnesses("s-counts", "p1", 4, D, _set({"p2": D}), ROSTER, required=["p2", "p3"])
    forged = _set({"p2": D}) | {"p3": (D, sign_witness(KEYS["p2"], "s-counts", 4, D))}  # p2's key, p3's name
    with pytest.raises(AggregatorMisbehaved, match="witness for 'p3' that 'p3' did not sign"):
        check_witnesses("s-counts", "p1", 4, D, forged, ROSTER, required=[])
    replayed = _set({"p2": D}, rnd=3)  # a witness of another round, served as this one's
    with pytest.raises(AggregatorMisbehaved, match="did not sign"):
        check_witnesses("s-counts", "p1", 4, D, replayed, ROSTER, required=[])
