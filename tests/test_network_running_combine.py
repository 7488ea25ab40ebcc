"""``mask`` rounds combined as updates arrive: same aggregate as ``combine``; restarts and dropouts fall back to it."""

import numpy as np
import pytest
from _protect_setup import contexts, random_counts, view

from fedtopic.crypto.protect import MASK, CombinerAdapter, mask_recovery
from fedtopic.network.combiners import COMBINERS
from fedtopic.network.errors import InvalidMeta, InvalidPayload
from fedtopic.network.schemas import SessionCreate
from fedtopic.network.service import Aggregator
from fedtopic.network.store import Store

SHAPE = (30, 7)
PARTIES = ["p0", "p1", "p2"]
RNG = np.random.default_rng(3)
MATS = [random_counts(RNG, SHAPE, 200) for _ in PARTIES]


class Clock:
    t = 1000.0

    def __call__(self) -> float:
        return self.t


class CountingMask(CombinerAdapter):
    """The real ``mask`` combiner, counting full combines."""

    calls = 0

    def combine(self, payloads, ctx, **kwargs):
        CountingMask.calls += 1
        return super().combine(payloads, ctx, **kwargs)


def _aggregator(tmp_path, clock) -> Aggregator:
    combiner = CountingMask(MASK, invalid_payload=InvalidPayload, invalid_meta=InvalidMeta)
    return Aggregator(Store(tmp_path), {p: f"0x{i + 1:040x}" for i, p in enumerate(PARTIES)}, protection="mask",
                      default_deadline=30.0, combiners={**COMBINERS, "mask": combiner}, clock=clock)


def _round(number: int):
    ctxs = contexts(SHAPE, parties=3, round=number, session="run")
    meta = MASK.session_meta(ctxs[0])
    return ctxs, meta, [MASK.encode_update(m, c) for m, c in zip(MATS, ctxs)]


def _open(agg: Aggregator, meta: dict) -> None:
    agg.open_session(SessionCreate(session_id="run", parties=PARTIES, combiner="mask", meta=meta), "p0")


def test_running_combine_gives_combines_bytes_without_a_full_combine(tmp_path):
    CountingMask.calls = 0
    agg = _aggregator(tmp_path, Clock())
    for number in (0, 1):
        ctxs, meta, updates = _round(number)
        if number == 0:
            _open(agg, meta)
        for party, update in zip(reversed(PARTIES), reversed(updates)):  # arrival order does not matter
            agg.submit("run", number, party, update)
        got = agg.aggregate("run", number, "p1").payload
        assert got == MASK.combine(updates, view(meta, [0, 1, 2], round=number, session="run"))
        assert np.array_equal(MASK.decode_aggregate(got, ctxs[2]), sum(m.astype(np.int64) for m in MATS))
    assert CountingMask.calls == 0


def test_a_restart_mid_round_falls_back_to_combining_the_stored_updates(tmp_path):
    CountingMask.calls = 0
    ctxs, meta, updates = _round(0)
    first = _aggregator(tmp_path, Clock())
    _open(first, meta)
    first.submit("run", 0, "p0", updates[0])
    first.submit("run", 0, "p1", updates[1])
    restarted = _aggregator(tmp_path, Clock())  # its running combine starts empty
    assert restarted.submit("run", 0, "p2", updates[2]).round_closed
    assert CountingMask.calls == 1
    got = restarted.aggregate("run", 0, "p0").payload
    assert np.array_equal(MASK.decode_aggregate(got, ctxs[0]), sum(m.astype(np.int64) for m in MATS))


def test_a_dropout_still_goes_through_recovery(tmp_path):
    clock = Clock()
    agg = _aggregator(tmp_path, clock)
    ctxs, meta, updates = _round(0)
    _open(agg, meta)
    agg.submit("run", 0, "p0", updates[0])
    agg.submit("run", 0, "p2", updates[2])
    clock.t += 31.0
    agg.tick()
    assert agg.recovery_wanted("run", 0, "p0") == (["p1"], ["p0", "p2"])
    for i in (0, 2):
        agg.post_recovery("run", 0, PARTIES[i], mask_recovery([1], ctxs[i]))
    got = agg.aggregate("run", 0, "p2").payload
    assert np.array_equal(MASK.decode_aggregate(got, ctxs[0]), MATS[0].astype(np.int64) + MATS[2])


def test_running_combine_refuses_a_second_fold_and_waits_for_every_party():
    _, meta, updates = _round(0)
    adapter = CombinerAdapter(MASK, invalid_payload=InvalidPayload, invalid_meta=InvalidMeta)
    running = adapter.running(meta, session="run", round=0)
    running.add(updates[0], 0)
    with pytest.raises(InvalidPayload, match="already folded"):
        running.add(updates[0], 0)
    with pytest.raises(InvalidPayload, match="filed under party index 2"):
        running.add(updates[1], 2)
    running.add(updates[1], 1)
    assert running.result(view(meta, [0, 1], round=0, session="run")) is None
    running.add(updates[2], 2)
    assert running.result(view(meta, [0, 1, 2], round=0, session="run")) == \
        MASK.combine(updates, view(meta, [0, 1, 2], round=0, session="run"))
