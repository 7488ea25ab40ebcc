"""The synchronous clock controller: pure round state machine, and the Aggregator service on a real SQLite store."""

from __future__ import annotations

import numpy as np
import pytest

from fedtopic.crypto.codec import decode_counts, encode_counts
from fedtopic.crypto.keys import generate_party_keys
from fedtopic.errors import ConfigError
from fedtopic.network.errors import Rejection
from fedtopic.network.rounds import (
    RoundState,
    admission_rejection,
    admit,
    close_reason,
    next_round,
)
from fedtopic.network.schemas import SessionCreate
from fedtopic.network.service import Aggregator
from fedtopic.network.settings import DEV_ADDRESSES, AggregatorSettings
from fedtopic.network.store import Store

PARTIES = ("a", "b", "c")


def _state(**kw) -> RoundState:
    return RoundState("s", kw.pop("number", 2), PARTIES, 10.0, **kw)


def test_admission_rules() -> None:
    st = _state(received=("a",), first_update_at=100.0)
    assert admission_rejection(st, 2, "b") is None
    assert admission_rejection(st, 2, "a").code == "duplicate_update"
    assert admission_rejection(st, 3, "b").code == "wrong_round"
    assert admission_rejection(st, 1, "b").code == "round_closed"
    rej = admission_rejection(st, 2, "zed")
    assert (rej.status, rej.code) == (403, "not_in_session")


def test_close_when_complete_or_deadline_counted_from_first_update() -> None:
    st = _state()
    assert close_reason(st, 1e12) is None  # an empty round never closes, however late
    st = admit(st, "b", now=100.0)
    st = admit(st, "a", now=105.0)
    assert st.first_update_at == 100.0 and st.deadline_at == 110.0
    assert st.missing == ("c",)
    assert close_reason(st, 109.99) is None
    assert close_reason(st, 110.0) == "deadline"
    assert close_reason(admit(st, "c", now=106.0), 106.0) == "complete"
    nxt = next_round(st)
    assert (nxt.number, nxt.received, nxt.first_update_at) == (3, (), None)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _aggregator(tmp_path, clock: Clock) -> Aggregator:
    parties = {p: f"0x{i:040x}" for i, p in enumerate(PARTIES, start=1)}
    return Aggregator(Store(tmp_path), parties, protection="none", default_deadline=30.0, clock=clock)


def _spec(**kw) -> SessionCreate:
    return SessionCreate(session_id="run", parties=list(PARTIES), combiner="none", meta={"shape": [4, 2]}, **kw)


def test_service_rounds_aggregate_deadline_and_resume(tmp_path) -> None:
    clock = Clock()
    agg = _aggregator(tmp_path, clock)
    out, created = agg.open_session(_spec(params={"K": 2}), "a")
    assert created and out.current_round == 0 and out.straggler_deadline_seconds == 30.0
    assert agg.open_session(_spec(params={"K": 2}), "b") == (out, False)  # joining is idempotent
    with pytest.raises(Rejection) as exc:
        agg.open_session(_spec(params={"K": 3}), "b")
    assert exc.value.code == "session_conflict"

    rng = np.random.default_rng(1)
    mats = {p: rng.integers(0, 5, (4, 2)) for p in PARTIES}
    for p in PARTIES:
        assert agg.aggregate("run", 0, p) is None
        agg.submit("run", 0, p, encode_counts(mats[p]))
    row = agg.aggregate("run", 0, "a")
    assert row.contributors == PARTIES and row.missing == () and row.close_reason == "complete"
    np.testing.assert_array_equal(decode_counts(row.payload), sum(mats.values()))

    # resend of an accepted update after its round closed: a duplicate carrying the stored hash
    with pytest.raises(Rejection) as exc:
        agg.submit("run", 0, "a", encode_counts(mats["a"]))
    assert exc.value.code == "duplicate_update" and "sha256" in exc.value.extra

    # round 1: two updates, then a restart (new Aggregator on the same store directory) resumes them
    agg.submit("run", 1, "a", encode_counts(mats["a"]))
    clock.t += 5
    agg.submit("run", 1, "b", encode_counts(mats["b"]))
    agg.store.close()
    agg = _aggregator(tmp_path, clock)
    info = agg.round_info("run", 1)
    assert (info.state, info.received, info.missing, info.deadline_at) == ("open", ["a", "b"], ["c"], 1030.0)
    clock.t = 1029.9
    agg.tick()
    assert agg.aggregate("run", 1, "a") is None
    clock.t = 1030.0
    agg.tick()
    row = agg.aggregate("run", 1, "c")
    assert row.contributors == ("a", "b") and row.missing == ("c",) and row.close_reason == "deadline"
    np.testing.assert_array_equal(decode_counts(row.payload), mats["a"] + mats["b"])
    with pytest.raises(Rejection) as exc:
        agg.submit("run", 1, "c", encode_counts(mats["c"]))
    assert exc.value.code == "round_closed"
    status = agg.status()
    assert status.sessions[0].current_round.round == 2
    assert [(e.round, e.missing) for e in status.sessions[0].straggler_events] == [(1, ["c"])]


def test_service_rejections_store_nothing(tmp_path) -> None:
    agg = _aggregator(tmp_path, Clock())
    agg.open_session(_spec(), "a")
    cases = [
        (("run", 1, "a", encode_counts(np.ones((4, 2), int))), "wrong_round"),
        (("run", 0, "a", encode_counts(np.ones((5, 2), int))), "invalid_payload"),
        (("run", 0, "a", b"garbage"), "invalid_payload"),
        (("nope", 0, "a", b""), "unknown_session"),
    ]
    for args, code in cases:
        with pytest.raises(Rejection) as exc:
            agg.submit(*args)
        assert exc.value.code == code, args
    assert agg.round_info("run", 0).received == []
    with pytest.raises(Rejection) as exc:
        agg.open_session(SessionCreate(session_id="x", parties=["a"], meta={"shape": [4, 2]}, combiner="paillier"), "a")
    assert exc.value.code == "unknown_combiner"
    with pytest.raises(Rejection) as exc:
        agg.open_session(SessionCreate(session_id="x", parties=["a"], combiner="none", meta={"shape": [4]}), "a")
    assert exc.value.code == "invalid_meta"
    with pytest.raises(Rejection) as exc:
        agg.open_session(SessionCreate(session_id="x", parties=["b"], combiner="none", meta={"shape": [1, 1]}), "a")
    assert exc.value.code == "not_in_session"


def test_vocabulary_alignment_union_in_code_point_order(tmp_path) -> None:
    agg = _aggregator(tmp_path, Clock())
    agg.open_session(_spec(), "a")
    assert agg.post_vocabulary("run", "a", ["zebra", "apple", "apple"]).missing == ["b", "c"]
    agg.post_vocabulary("run", "b", ["Zulu", "apple"])
    assert agg.post_vocabulary("run", "a", ["apple", "zebra"]).complete is False  # same set again: a no-op
    with pytest.raises(Rejection) as exc:
        agg.post_vocabulary("run", "a", ["other"])
    assert exc.value.code == "vocabulary_conflict"
    out = agg.post_vocabulary("run", "c", ["éclair"])
    assert out.complete and out.words == ["Zulu", "apple", "zebra", "éclair"] and out.size == 4


def test_settings_refuse_dev_accounts_and_bad_addresses(tmp_path) -> None:
    good = generate_party_keys("p1", seed=b"s").address
    assert AggregatorSettings.build(parties={"p1": good}, data_dir=tmp_path).parties == {"p1": good}
    dev = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
    assert dev.lower() in DEV_ADDRESSES
    with pytest.raises(ConfigError, match="development account"):
        AggregatorSettings.build(parties={"p1": dev}, data_dir=tmp_path)
    with pytest.raises(ConfigError, match="checksummed"):
        AggregatorSettings.build(parties={"p1": good.lower()}, data_dir=tmp_path)
    with pytest.raises(ConfigError, match="straggler_deadline_seconds"):
        AggregatorSettings.build(parties={"p1": good}, data_dir=tmp_path, straggler_deadline_seconds=0)


def test_full_round_left_open_by_a_crash_closes_on_restart(tmp_path) -> None:
    clock = Clock()
    agg = _aggregator(tmp_path, clock)
    agg.open_session(_spec(), "a")
    mats = {p: np.full((4, 2), i + 1) for i, p in enumerate(PARTIES)}
    for p in PARTIES:  # what a kill -9 between the last update's commit and the aggregate's commit leaves
        payload = encode_counts(mats[p])
        agg.store.add_update("run", 0, p, "0" * 64, payload, clock.t)
    agg.store.close()
    agg = _aggregator(tmp_path, clock)
    agg.tick()
    row = agg.aggregate("run", 0, "b")
    assert row.close_reason == "complete"
    np.testing.assert_array_equal(decode_counts(row.payload), np.full((4, 2), 6))


def test_a_read_closes_a_due_round_and_the_latest_aggregate_is_the_stored_one(tmp_path) -> None:
    """Reads skip the lock unless something is due: a read after the deadline still closes the round (no
    ticker runs here), and the aggregate kept in memory for every member's read is the one committed."""
    clock = Clock()
    agg = _aggregator(tmp_path, clock)
    agg.open_session(_spec(), "a")
    mats = {p: np.full((4, 2), i + 1) for i, p in enumerate(PARTIES)}
    agg.submit("run", 0, "a", encode_counts(mats["a"]))
    clock.t += 29.9
    assert agg.aggregate("run", 0, "b") is None and not agg.is_closed("run", 0)
    clock.t += 0.1
    row = agg.aggregate("run", 0, "b")  # the deadline passed: this read closes the round
    assert row.close_reason == "deadline" and row.contributors == ("a",) and row.missing == ("b", "c")
    assert row == agg.store.aggregate("run", 0)
    with pytest.raises(Rejection) as exc:
        agg.aggregate("run", 2, "a")
    assert exc.value.code == "round_not_open"
    for p in PARTIES:
        agg.submit("run", 1, p, encode_counts(mats[p]))
    latest = agg.aggregate("run", 1, "c")
    assert latest == agg.store.aggregate("run", 1) and latest.close_reason == "complete"
    assert agg.aggregate("run", 0, "c") == row  # an older round comes from the store


def test_status_repeats_its_answer_only_while_nothing_changed(tmp_path) -> None:
    """``/status`` (no signature, O(sessions × members)) is computed again on any change, or once ``max_age``
    has passed; never per request while a flood repeats it."""
    clock = Clock()
    agg = _aggregator(tmp_path, clock)
    agg.open_session(_spec(), "a")
    first = agg.status(max_age=60)
    assert agg.status(max_age=60) is first
    assert agg.status(max_age=0) is not first  # no max age: always fresh
    agg.submit("run", 0, "a", encode_counts(np.ones((4, 2), dtype=np.int64)))
    after_submit = agg.status(max_age=60)
    assert after_submit.sessions[0].current_round.received == ["a"]
    clock.t += 30  # the straggler deadline passed: due, so computed again (and the read closes the round)
    closed = agg.status(max_age=60)
    assert closed.sessions[0].current_round.round == 1 and closed.sessions[0].straggler_events
    agg.end_session("run", "b", "finished")
    assert agg.status(max_age=60).sessions[0].seen[1].ended == "finished"


def test_a_finished_sessions_status_shows_its_last_round_closed_with_everyone(tmp_path) -> None:
    """Once every member finished, /status shows the round they all took (closed, nobody missing), not the empty
    round the clock opened after it (before: round 1 "open", every member missing)."""
    clock = Clock()
    agg = _aggregator(tmp_path, clock)
    agg.open_session(_spec(), "a")
    members = list(agg.status().sessions[0].parties)
    for p in members:
        agg.submit("run", 0, p, encode_counts(np.ones((4, 2), dtype=np.int64)))
    running = agg.status().sessions[0]
    assert running.state == "running" and running.current_round.round == 1 and running.current_round.received == []
    for p in members:
        agg.end_session("run", p, "finished")
    ended = agg.status().sessions[0]
    assert ended.state == "finished" and ended.missing == []
    assert ended.current_round.round == 0 and ended.current_round.state == "closed"
    assert ended.current_round.missing == [] and sorted(ended.current_round.received) == sorted(members)


def test_the_lock_free_read_gives_only_the_last_combined_aggregate_to_a_member(tmp_path) -> None:
    clock = Clock()
    agg = Aggregator(Store(tmp_path), {p: f"0x{i:040x}" for i, p in enumerate((*PARTIES, "x"), start=1)},
                     protection="none", default_deadline=30.0, clock=clock)
    agg.open_session(_spec(), "a")
    mats = {p: np.full((4, 2), i + 1) for i, p in enumerate(PARTIES)}
    assert agg.recent_aggregate("run", 0, "a") is None  # open
    for p in PARTIES:
        agg.submit("run", 0, p, encode_counts(mats[p]))
    assert agg.recent_aggregate("run", 0, "b") == agg.aggregate("run", 0, "b")
    assert agg.recent_aggregate("run", 0, "x") is None  # in the consortium, not in the session
    assert agg.recent_aggregate("nope", 0, "a") is None
    agg.submit("run", 1, "a", encode_counts(mats["a"]))
    agg.submit("run", 1, "b", encode_counts(mats["b"]))
    agg.submit("run", 1, "c", encode_counts(mats["c"]))
    assert agg.recent_aggregate("run", 0, "a") is None  # no longer the last: the store has it
    np.testing.assert_array_equal(decode_counts(agg.aggregate("run", 0, "a").payload), sum(mats.values()))
    agg.submit("run", 2, "a", encode_counts(mats["a"]))
    clock.t += 31.0  # a deadline closes round 2 with a, which none releases (the sum of a's own update is fine)
    agg.tick()
    assert agg.recent_aggregate("run", 2, "c") == agg.aggregate("run", 2, "c")
