"""The session card in front of a published payload: attach/detach round-trips any card and payload, and a reader
whose card differs stops with one line naming both parties and the params that differ."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtopic.crypto.card import (
    MAX_CARD_BYTES,
    attach_card,
    card_of,
    check_card,
    detach_card,
)
from fedtopic.errors import SessionMismatch


@given(st.binary(min_size=1, max_size=MAX_CARD_BYTES), st.binary(max_size=2000))
def test_attach_then_detach_gives_back_card_and_payload(card, payload):
    assert detach_card(attach_card(card, payload)) == (card, payload)


@given(st.binary(max_size=2000))
def test_a_payload_without_a_card_passes_unchanged(payload):
    assert attach_card(b"", payload) == payload
    if not payload.startswith(b"FTSC"):
        assert detach_card(payload) == (b"", payload)


def test_equal_params_give_equal_cards_and_a_difference_is_named():
    a = card_of({"algorithm": "dafed-lda", "topics": 5, "vocabulary": 24, "vocab_sha256": "ab" * 32})
    assert a == card_of({"vocab_sha256": "ab" * 32, "vocabulary": 24, "topics": 5, "algorithm": "dafed-lda"})
    check_card("p1", a, "p2", a)
    b = card_of({"algorithm": "dafed-lda", "topics": 5, "vocabulary": 24, "vocab_sha256": "cd" * 32})
    with pytest.raises(SessionMismatch) as err:
        check_card("p1", a, "p2", b)
    assert "p1 and p2 disagree" in str(err.value) and "another order" in str(err.value)
    with pytest.raises(SessionMismatch, match="publishes no session params"):
        check_card("p1", a, "p2", b"")
    with pytest.raises(ValueError, match="exceeds"):
        card_of({"x": "y" * MAX_CARD_BYTES})
