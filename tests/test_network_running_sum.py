"""``none`` and ``dense-sum`` rounds folded in as updates arrive (``RunningSum``): the bytes ``combine`` gives for
the same updates in party order, whatever the arrival order; a restart or a missing party falls back to it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.crypto.codec import encode_counts
from fedtopic.network.combiners import (
    COMBINERS,
    DenseSumCombiner,
    RoundContext,
    RunningSum,
)
from fedtopic.network.errors import InvalidPayload
from fedtopic.network.schemas import SessionCreate
from fedtopic.network.service import Aggregator
from fedtopic.network.sparse import encode_array
from fedtopic.network.store import Store


def _ctx(meta: dict, n: int, round: int = 0) -> RoundContext:
    parties = tuple(f"p{i}" for i in range(n))
    return RoundContext("s", round, meta, parties, parties)


def _float_updates(rng: np.random.Generator, n: int, size: int) -> list[np.ndarray]:
    """Updates whose float sum depends on the order of the additions (magnitudes 1e-3 to 1e16), some sparse."""
    out = []
    for _ in range(n):
        a = rng.normal(size=size) * 10.0 ** rng.integers(-3, 17, size)
        a[rng.random(size) < 0.6] = 0.0
        out.append(a)
    return out


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 7), st.integers(0, 2**32 - 1))
def test_dense_running_sum_has_combines_bytes_in_any_arrival_order(parties: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    meta = {"shape": [64], "dtype": "float64"}
    combiner = COMBINERS["dense-sum"]
    payloads = [encode_array(a) for a in _float_updates(rng, parties, 64)]
    want = combiner.combine(payloads, _ctx(meta, parties))
    running = combiner.running(meta, session="s", round=0)
    for i in rng.permutation(parties):
        checked = combiner.validate(payloads[i], meta) if i % 2 else None  # with and without the decoded array
        running.add(payloads[i], int(i), checked)
    assert running.result(_ctx(meta, parties)) == want


def test_the_order_matters_so_the_running_sum_must_keep_it() -> None:
    """What the property above guards: summed in this arrival order the three give other bits."""
    meta = {"shape": [1], "dtype": "float64"}
    values = [1e16, 1.0, -1e16]
    payloads = [encode_array(np.array([v])) for v in values]
    combiner = COMBINERS["dense-sum"]
    want = combiner.combine(payloads, _ctx(meta, 3))
    assert np.frombuffer(want[-8:], "<f8")[0] == 0.0  # (1e16 + 1) − 1e16: the 1 is lost
    arrival = (2, 0, 1)
    assert (values[2] + values[0]) + values[1] == 1.0  # what folding in arrival order would give
    running = combiner.running(meta, session="s", round=0)
    for i in arrival:
        running.add(payloads[i], i)
    assert running.result(_ctx(meta, 3)) == want


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_count_running_sum_equals_combine(parties: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    meta = {"shape": [9, 4]}
    combiner = COMBINERS["none"]
    payloads = [encode_counts(rng.integers(0, 40, (9, 4)) * (rng.random((9, 4)) < 0.5)) for _ in range(parties)]
    running = combiner.running(meta, session="s", round=0)
    for i in rng.permutation(parties):
        running.add(payloads[i], int(i), combiner.validate(payloads[i], meta))
    assert running.result(_ctx(meta, parties)) == combiner.combine(payloads, _ctx(meta, parties))


def test_running_sum_waits_for_every_party_and_refuses_a_second_fold() -> None:
    meta = {"shape": [3], "dtype": "float64"}
    combiner = COMBINERS["dense-sum"]
    payloads = [encode_array(np.array([1.0, 2.0, float(i)])) for i in range(3)]
    running = combiner.running(meta, session="s", round=0)
    running.add(payloads[2], 2)
    running.add(payloads[1], 1)
    with pytest.raises(InvalidPayload, match="already folded"):
        running.add(payloads[1], 1)
    assert running.result(_ctx(meta, 3)) is None  # party 0 missing: nothing folded yet, two waiting
    running.add(payloads[0], 0)
    assert running.result(_ctx(meta, 3, round=1)) is None  # another round's view
    partial = RoundContext("s", 0, meta, ("p0", "p1"), ("p0", "p1", "p2"))  # a deadline left p2 out
    assert running.result(partial) is None
    assert running.result(_ctx(meta, 3)) == combiner.combine(payloads, _ctx(meta, 3))


def test_an_ordered_sum_gives_up_beyond_its_waiting_bytes_and_combine_takes_over() -> None:
    """A first party late with every other update waiting decoded: past ``max_waiting`` bytes the running sum
    drops them and says so (None), so the close combines the stored updates; in order, nothing ever waits."""
    meta = {"shape": [100], "dtype": "float64"}
    combiner = COMBINERS["dense-sum"]
    payloads = [encode_array(a) for a in _float_updates(np.random.default_rng(5), 4, 100)]

    def running(cap: int) -> RunningSum:
        return RunningSum(0, np.zeros(100), ordered=True, decode=lambda b: combiner.validate(b, meta),
                          finish=lambda total: encode_array(total), max_waiting=cap)

    late_first = running(2 * 800)  # room for two waiting arrays of 100 float64, not three
    for i in (1, 2, 3, 0):
        late_first.add(payloads[i], i)
    assert late_first.result(_ctx(meta, 4)) is None
    roomy = running(3 * 800)
    for i in (1, 2, 3, 0):
        roomy.add(payloads[i], i)
    in_order = running(0)
    for i in range(4):
        in_order.add(payloads[i], i)
    assert roomy.result(_ctx(meta, 4)) == in_order.result(_ctx(meta, 4)) == combiner.combine(payloads, _ctx(meta, 4))


def test_int64_running_sum_refuses_an_overflow_like_combine() -> None:
    meta = {"shape": [2], "dtype": "int64"}
    combiner = COMBINERS["dense-sum"]
    big = encode_array(np.array([2**62, 0], dtype=np.int64))
    with pytest.raises(InvalidPayload, match="overflow"):
        combiner.combine([big, big], _ctx(meta, 2))
    running = combiner.running(meta, session="s", round=0)
    running.add(big, 1)
    with pytest.raises(InvalidPayload, match="overflow"):
        running.add(big, 0)


class CountingDense(DenseSumCombiner):
    calls = 0

    def combine(self, payloads, ctx):
        CountingDense.calls += 1
        return super().combine(payloads, ctx)


def _aggregator(tmp_path, parties: list[str]) -> Aggregator:
    return Aggregator(Store(tmp_path), {p: f"0x{i + 1:040x}" for i, p in enumerate(parties)}, protection="none",
                      default_deadline=30.0, combiners={**COMBINERS, "dense-sum": CountingDense()})


def test_the_aggregator_folds_dense_updates_in_and_keeps_the_party_order(tmp_path) -> None:
    parties = [f"p{i}" for i in range(5)]
    meta = {"shape": [20_000], "dtype": "float64"}  # large enough for payload files, not rows
    rng = np.random.default_rng(0)
    agg = _aggregator(tmp_path / "a", parties)
    agg.open_session(SessionCreate(session_id="run", parties=parties, combiner="dense-sum", meta=meta), "p0")
    CountingDense.calls = 0
    for number in (0, 1):
        payloads = [encode_array(a) for a in _float_updates(rng, 5, 20_000)]
        for i in (3, 0, 4, 2, 1):
            agg.submit("run", number, parties[i], payloads[i])
        got = agg.aggregate("run", number, "p2").payload
        assert got == DenseSumCombiner().combine(payloads, _ctx(meta, 5, number))
    assert CountingDense.calls == 0

    restarted = _aggregator(tmp_path / "b", parties)  # a restart mid-round: the stored updates are combined
    restarted.open_session(SessionCreate(session_id="run", parties=parties, combiner="dense-sum", meta=meta), "p0")
    payloads = [encode_array(a) for a in _float_updates(rng, 5, 20_000)]
    for i in (1, 0):
        restarted.submit("run", 0, parties[i], payloads[i])
    restarted = _aggregator(tmp_path / "b", parties)
    for i in (4, 2, 3):
        restarted.submit("run", 0, parties[i], payloads[i])
    assert CountingDense.calls == 1
    assert restarted.aggregate("run", 0, "p0").payload == DenseSumCombiner().combine(payloads, _ctx(meta, 5))
