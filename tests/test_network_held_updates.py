"""Updates whose senders wait on the line (``submit(durable=False)``): held in memory, never lost once answered.

A restart is a new ``Aggregator`` on the same store directory (what a kill -9 leaves: only what was committed).
"""

import numpy as np
import pytest
from _protect_setup import contexts, random_counts

from fedtopic.crypto.codec import decode_counts, encode_counts
from fedtopic.crypto.protect import MASK, CombinerAdapter, mask_recovery
from fedtopic.network.combiners import COMBINERS
from fedtopic.network.errors import InvalidMeta, InvalidPayload, Rejection
from fedtopic.network.schemas import SessionCreate
from fedtopic.network.service import Aggregator
from fedtopic.network.store import Store
from fedtopic.network.wire import sha256_hex

PARTIES = ("a", "b", "c")
SHAPE = (4, 2)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def _aggregator(tmp_path, clock: Clock, protection: str = "none") -> Aggregator:
    mask = CombinerAdapter(MASK, invalid_payload=InvalidPayload, invalid_meta=InvalidMeta)
    return Aggregator(Store(tmp_path), {p: f"0x{i:040x}" for i, p in enumerate(PARTIES, start=1)},
                      protection=protection, default_deadline=30.0, combiners={**COMBINERS, "mask": mask},
                      clock=clock)


def _restart(agg: Aggregator, tmp_path, clock: Clock, protection: str = "none") -> Aggregator:
    agg.store.close()
    return _aggregator(tmp_path, clock, protection)


def _counts(party: str) -> np.ndarray:
    return np.full(SHAPE, PARTIES.index(party) + 1)


def _opened(tmp_path) -> tuple[Aggregator, Clock]:
    """An aggregator with session "run" (counts, ``none``) open, and its clock."""
    clock = Clock()
    agg = _aggregator(tmp_path, clock)
    agg.open_session(SessionCreate(session_id="run", parties=list(PARTIES), combiner="none",
                                   meta={"shape": list(SHAPE)}), "a")
    return agg, clock


def test_a_held_update_is_written_only_with_its_rounds_end(tmp_path):
    agg, clock = _opened(tmp_path)
    agg.submit("run", 0, "a", encode_counts(_counts("a")), durable=False)
    clock.t += 2
    agg.submit("run", 0, "b", encode_counts(_counts("b")), durable=False)
    info = agg.round_info("run", 0)  # what the aggregator shows counts the held updates
    assert (info.received, info.missing, info.first_update_at) == (["a", "b"], ["c"], 1000.0)
    assert agg.progress("run", "b").you.last_round == 0
    assert {s.party: s.last_round for s in agg.status().sessions[0].seen} == {"a": 0, "b": 0, "c": None}
    assert agg.store.round("run", 0).received == ()  # nothing written yet
    clock.t += 1
    assert agg.submit("run", 0, "c", encode_counts(_counts("c")), durable=False).round_closed
    agg = _restart(agg, tmp_path, clock)
    row = agg.aggregate("run", 0, "a")
    np.testing.assert_array_equal(decode_counts(row.payload), 6 * np.ones(SHAPE))
    stored = agg.store.round("run", 0)
    assert (stored.received, stored.first_update_at, stored.closed_at) == (PARTIES, 1000.0, 1003.0)
    assert agg.store.update_sha256("run", 0, "b") == sha256_hex(encode_counts(_counts("b")))
    with pytest.raises(Rejection) as exc:  # a resent copy after the close: the duplicate with its hash
        agg.submit("run", 0, "b", encode_counts(_counts("b")))
    assert exc.value.code == "duplicate_update" and exc.value.extra["sha256"] == sha256_hex(
        encode_counts(_counts("b")))


def test_a_restart_forgets_held_updates_and_keeps_written_ones(tmp_path):
    agg, clock = _opened(tmp_path)
    agg.submit("run", 0, "a", encode_counts(_counts("a")), durable=False)
    agg.submit("run", 0, "b", encode_counts(_counts("b")), durable=False)
    agg.write_held("run", 0, "b")  # its wait ended: the receipt goes out after this
    agg.write_held("run", 0, "b")  # twice is once
    agg = _restart(agg, tmp_path, clock)
    assert agg.round_info("run", 0).received == ["b"]  # a's sender lost its connection and sends again
    agg.submit("run", 0, "a", encode_counts(_counts("a")), durable=False)
    clock.t += 1
    assert agg.submit("run", 0, "c", encode_counts(_counts("c"))).round_closed
    np.testing.assert_array_equal(decode_counts(agg.aggregate("run", 0, "c").payload), 6 * np.ones(SHAPE))
    agg.write_held("run", 0, "a")  # after the round ended: nothing to do, its row came with the close
    assert agg.store.round("run", 0).received == ("b", "a", "c")


def test_a_resent_held_update_is_written_before_the_duplicate_answer(tmp_path):
    """The duplicate answer tells a sender whose connection broke that its update is in: it must then survive."""
    agg, clock = _opened(tmp_path)
    payload = encode_counts(_counts("a"))
    agg.submit("run", 0, "a", payload, durable=False)
    with pytest.raises(Rejection) as exc:
        agg.submit("run", 0, "a", payload)
    assert exc.value.code == "duplicate_update" and exc.value.extra["sha256"] == sha256_hex(payload)
    agg = _restart(agg, tmp_path, clock)
    assert agg.round_info("run", 0).received == ["a"]


def test_a_deadline_close_records_the_held_updates(tmp_path):
    agg, clock = _opened(tmp_path)
    agg.submit("run", 0, "a", encode_counts(_counts("a")), durable=False)
    agg.submit("run", 0, "c", encode_counts(_counts("c")), durable=False)
    clock.t += 30
    agg.tick()
    agg = _restart(agg, tmp_path, clock)
    row = agg.aggregate("run", 0, "b")
    assert (row.contributors, row.missing, row.close_reason) == (("a", "c"), ("b",), "deadline")
    np.testing.assert_array_equal(decode_counts(row.payload), 4 * np.ones(SHAPE))
    assert agg.store.round("run", 0).received == ("a", "c")


def test_a_round_waiting_for_recovery_writes_its_held_updates_first(tmp_path):
    """A masked round that lost a party outlives the requests that brought its updates: they are written when
    the recovery is requested, so a restart still recovers the round."""
    clock = Clock()
    rng = np.random.default_rng(5)
    mats = [random_counts(rng, (30, 7), 200) for _ in PARTIES]
    ctxs = contexts((30, 7), parties=3, round=0, session="run")
    updates = [MASK.encode_update(m, c) for m, c in zip(mats, ctxs)]
    agg = _aggregator(tmp_path, clock, "mask")
    agg.open_session(SessionCreate(session_id="run", parties=list(PARTIES), combiner="mask",
                                   meta=MASK.session_meta(ctxs[0])), "a")
    agg.submit("run", 0, "a", updates[0], durable=False)
    agg.submit("run", 0, "c", updates[2], durable=False)
    clock.t += 31
    agg.tick()
    assert agg.recovery_wanted("run", 0, "a") == (["b"], ["a", "c"])
    agg = _restart(agg, tmp_path, clock, "mask")
    for i in (0, 2):
        agg.post_recovery("run", 0, PARTIES[i], mask_recovery([1], ctxs[i]))
    got = agg.aggregate("run", 0, "c").payload
    assert np.array_equal(MASK.decode_aggregate(got, ctxs[0]), mats[0].astype(np.int64) + mats[2])
