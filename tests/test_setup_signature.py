"""The launcher's signature over a setup session: it verifies for exactly the session, combiner, meta and params
it was made for, and for the launcher's address only (hypothesis: any edit of any value is caught)."""

from __future__ import annotations

from eth_account import Account
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.crypto.setup_signature import SIGNATURE_PARAM, setup_signed_by, sign_setup

KEY = bytes.fromhex("22" * 32)
LAUNCHER = Account.from_key(KEY).address
values = st.one_of(st.integers(-2**40, 2**40), st.text(max_size=12), st.booleans(),
                   st.lists(st.integers(0, 9), max_size=3))
maps = st.dictionaries(st.text("abcdefgh_", min_size=1, max_size=8), values, min_size=1, max_size=5)


@settings(max_examples=60, deadline=None)
@given(meta=maps, params=maps, which=st.sampled_from(["meta", "params", "combiner", "session"]), data=st.data())
def test_any_edit_of_a_signed_setup_is_caught(meta, params, which, data):
    params = {k: v for k, v in params.items() if k != SIGNATURE_PARAM}
    signed = params | {SIGNATURE_PARAM: sign_setup(KEY, "run-freq", "mask", meta, params)}
    assert setup_signed_by(LAUNCHER, "run-freq", "mask", meta, signed)
    assert not setup_signed_by(Account.create().address, "run-freq", "mask", meta, signed)
    session, combiner = "run-freq", "mask"
    if which in ("meta", "params"):
        target = dict(meta if which == "meta" else params)
        key = data.draw(st.sampled_from(sorted(target)))
        target[key] = [target[key], "edited"]
        meta, signed = (target, signed) if which == "meta" else (meta, target | {SIGNATURE_PARAM:
                                                                                 signed[SIGNATURE_PARAM]})
    elif which == "combiner":
        combiner = "none"
    else:
        session = "run-counts"
    assert not setup_signed_by(LAUNCHER, session, combiner, meta, signed)


def test_a_missing_or_malformed_signature_is_not_signed():
    assert not setup_signed_by(LAUNCHER, "s", "mask", {}, {})
    assert not setup_signed_by(LAUNCHER, "s", "mask", {}, {SIGNATURE_PARAM: "0x1234"})
    assert not setup_signed_by(LAUNCHER, "s", "mask", {"x": float("nan")}, {SIGNATURE_PARAM: "0x" + "00" * 65})
