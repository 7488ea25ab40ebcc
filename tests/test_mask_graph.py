"""``mask`` on a sparse neighbour graph (SecAgg+): the graph, its connectivity lemma, dropouts, and the collusion
it does and does not resist."""

import itertools

import numpy as np
import pytest
from _protect_setup import contexts, random_counts, view
from hypothesis import given, settings
from hypothesis import strategies as st

from fedtopic.crypto.bitpack import unpack_bits
from fedtopic.crypto.protect import MASK, InvalidUpdate, RecoveryNeeded, mask_recovery
from fedtopic.crypto.protect.base import HEADER
from fedtopic.crypto.protect.mask import (
    _Keystreams,
    _pair_key,
    _self_key,
    _self_mask_terms,
)
from fedtopic.crypto.protect.mask_graph import (
    adjacent_to,
    check_degree,
    default_degree,
    neighbours,
    ring,
)
from fedtopic.network.schemas import SessionCreate
from fedtopic.network.service import Aggregator
from fedtopic.network.store import Store

SHAPE = (30, 4)


def _connected(vertices: set[int], edges) -> bool:
    if not vertices:
        return True
    seen, todo = set(), [min(vertices)]
    while todo:
        v = todo.pop()
        if v not in seen:
            seen.add(v)
            todo.extend(w for w in edges(v) if w in vertices)
    return seen == vertices


def test_default_degree_is_every_pair_for_small_consortia_and_logarithmic_beyond():
    assert [default_degree(p) for p in (1, 2, 3, 20, 59)] == [0, 1, 2, 19, 58]
    assert default_degree(60) == 58 and default_degree(100) == 60 and default_degree(1000) == 64
    for p in (60, 100, 1000, 4096):  # P · (1/3)^h <= 2^-40 with h = k / 2
        h = default_degree(p) // 2
        assert p * 3.0 ** -h <= 2.0**-40 < p * 3.0 ** -(h - 1)
        assert check_degree(p, default_degree(p)) is None
    assert "even" in check_degree(100, 7) and "[1, 99]" in check_degree(100, 100)
    assert check_degree(100, 99) is None and "integer" in check_degree(10, "4")


def test_the_ring_is_a_permutation_fixed_by_the_session():
    order, position = ring("s-1", 500)
    assert sorted(order) == list(range(500)) and all(order[position[i]] == i for i in range(500))
    assert ring("s-1", 500) == (order, position) and ring("s-2", 500)[0] != order
    assert order != tuple(range(500))


@pytest.mark.parametrize("parties,degree", [(40, 6), (41, 10), (9, 8), (7, 4)])
def test_neighbourhoods_are_symmetric_and_of_the_stated_degree(parties, degree):
    graph = {i: neighbours("s", parties, degree, i) for i in range(parties)}
    assert all(len(n) == min(degree, parties - 1) and i not in n for i, n in graph.items())
    assert all(i in graph[j] for i, n in graph.items() for j in n)


@pytest.mark.parametrize("parties,h", [(12, 2), (11, 3), (13, 1)])
def test_removing_fewer_than_two_runs_of_h_ring_positions_never_disconnects(parties, h):
    """The lemma of ``mask_graph``, for every subset of ring positions; and |R| < 2h always leaves it connected."""
    order, _ = ring("lemma", parties)
    graph = {i: neighbours("lemma", parties, 2 * h, i) for i in range(parties)}
    disconnected = 0
    for mask in range(1 << parties):
        removed = [(mask >> r) & 1 for r in range(parties)]  # by ring position
        runs, length = [], 0
        start = removed.index(0) if 0 in removed else 0
        for r in range(parties):  # maximal cyclic runs of removed positions, starting after a kept one
            if removed[(start + 1 + r) % parties]:
                length += 1
            elif length:
                runs.append(length)
                length = 0
        runs += [length] if length else []
        kept = {order[r] for r in range(parties) if not removed[r]}
        connected = _connected(kept, graph.__getitem__)
        if sum(run >= h for run in runs) < 2 or sum(removed) < 2 * h:
            assert connected, (removed, runs)
        disconnected += not connected
    assert disconnected > 0  # the lemma's condition is not vacuous: two runs of h do split the ring


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 9).flatmap(lambda p: st.tuples(st.just(p), st.sets(st.integers(0, p - 1), min_size=1))))
def test_telescoped_self_masks_sum_to_the_terms_the_decoder_uses(case):
    """Σ_{i in C} s_i with s_i = R_i - R_{i+1} (+ Z for party 0) equals the decoder's 2·(runs) + 1 keystreams."""
    parties, contributors = case
    ctx = contexts(SHAPE, parties=parties)[0]
    streams = _Keystreams(SHAPE[0] * SHAPE[1], 32)
    r = [streams(_self_key(ctx, i)).copy() for i in range(parties)]
    z = streams(_self_key(ctx, None)).copy()
    direct = sum((r[i] - r[(i + 1) % parties] + (z if i == 0 else 0) for i in contributors), np.zeros_like(z))
    added, subtracted = _self_mask_terms(sorted(contributors), parties)
    terms = sum((z if a is None else r[a] for a in added), np.zeros_like(z)) - \
        sum((r[b] for b in subtracted), np.zeros_like(z))
    assert np.array_equal(direct, terms)
    assert len(added) + len(subtracted) <= 2 * min(len(contributors), parties - len(contributors)) + 1
    if len(contributors) == parties:
        assert added == [None] and subtracted == []


PARTIES, DEGREE = 20, 4
CTXS = contexts(SHAPE, parties=PARTIES, mask_degree=DEGREE)
META = MASK.session_meta(CTXS[0])
RNG = np.random.default_rng(9)
MATS = [random_counts(RNG, SHAPE, 200) for _ in range(PARTIES)]
UPDATES = [MASK.encode_update(m, c) for m, c in zip(MATS, CTXS)]


def test_the_session_meta_carries_the_degree_and_refuses_a_wrong_one():
    assert META["mask_degree"] == DEGREE
    MASK.check_meta(META)
    for bad in (3, 20, 0):
        with pytest.raises(InvalidUpdate, match="mask_degree"):
            MASK.check_meta(META | {"mask_degree": bad})



def test_a_session_opened_before_the_graph_still_combines_as_every_pair():
    """An aggregator upgraded mid-run keeps combining an older session (no mask_degree): every survivor's recovery
    is wanted, as that version's parties send; a party of this version refuses to join it (its meta differs)."""
    old = {k: v for k, v in META.items() if k != "mask_degree"}
    MASK.check_meta(old)
    assert MASK.max_update_bytes(old) == MASK.max_update_bytes(META)
    survivors = [i for i in range(PARTIES) if i != 5]
    with pytest.raises(RecoveryNeeded) as info:
        MASK.combine([UPDATES[i] for i in survivors], view(old, survivors, parties=PARTIES))
    assert info.value.survivors == tuple(survivors)
    assert MASK.session_meta(CTXS[0]) != old


@pytest.mark.parametrize("dropped", [[], [3], [0, 19], [2, 3, 4], [1, 5, 6, 9, 12, 17]])
def test_only_survivors_next_to_a_dropout_send_recoveries_and_the_sum_is_exact(dropped):
    survivors = [i for i in range(PARTIES) if i not in dropped]
    rv = view(META, survivors, parties=PARTIES)
    payloads = [UPDATES[i] for i in survivors]
    needed = sorted(adjacent_to(rv.session, PARTIES, DEGREE, set(dropped)))
    assert len(needed) <= DEGREE * len(dropped) and (len(dropped) != 1 or len(needed) == DEGREE)
    if needed:
        with pytest.raises(RecoveryNeeded) as info:
            MASK.combine(payloads, rv)
        assert info.value.dropped == tuple(dropped) and info.value.survivors == tuple(needed)
        for idle in [i for i in survivors if i not in needed][:1]:
            with pytest.raises(InvalidUpdate, match="does not fit"):  # a survivor nobody asked
                MASK.combine(payloads, rv, recoveries=[mask_recovery(dropped, CTXS[idle])])
    aggregate = MASK.combine(payloads, rv, recoveries=[mask_recovery(dropped, CTXS[i]) for i in needed])
    expected = np.sum([MATS[i] for i in survivors], axis=0, dtype=np.int64)
    for reader in (survivors[0], survivors[-1]):
        assert np.array_equal(MASK.decode_aggregate(aggregate, CTXS[reader]), expected)


def _strip(target: int, helpers: list[int]) -> np.ndarray:
    """What an aggregator holding the consortium secret (one colluding party) and the pair keys of ``helpers``
    (colluding neighbours) makes of y_target: remove its self mask and those pairwise masks."""
    bits, cells = META["mask_bits"], SHAPE[0] * SHAPE[1]
    y = unpack_bits(UPDATES[target][HEADER.size:], cells, bits)
    streams = _Keystreams(cells, bits)
    y -= streams(_self_key(CTXS[target], target))
    y += streams(_self_key(CTXS[target], (target + 1) % PARTIES))
    if target == 0:
        y -= streams(_self_key(CTXS[target], None))
    for j in helpers:
        stream = streams(_pair_key(CTXS[j], target))  # the helper's copy of the key it shares with target
        if target < j:
            y -= stream
        else:
            y += stream
    return (y & y.dtype.type((1 << bits) - 1)).reshape(SHAPE)


def test_an_aggregator_needs_every_neighbour_of_a_party_to_read_its_update():
    """The attack the graph must resist: with all k neighbours colluding N_i comes out exactly (so the attack is
    right), with one of them honest it stays uniform; non-neighbours' keys do not help."""
    target = 6
    near = list(neighbours(CTXS[0].session, PARTIES, DEGREE, target))
    far = [j for j in range(PARTIES) if j not in near and j != target]
    assert np.array_equal(_strip(target, near), MATS[target])
    for honest in near:
        leaked = _strip(target, [j for j in near if j != honest] + far)
        assert np.mean(leaked == MATS[target]) < 0.05


def test_every_pair_masks_each_other_under_the_default_degree():
    ctxs = contexts(SHAPE, parties=6)
    meta = MASK.session_meta(ctxs[0])
    assert meta["mask_degree"] == 5
    for i, j in itertools.combinations(range(6), 2):
        assert j in neighbours(ctxs[0].session, 6, 5, i)


def test_the_aggregator_asks_only_the_dropouts_neighbours_and_closes_on_their_recoveries(tmp_path):
    """Service path: a round losing one party waits for its k neighbours' recoveries, not every survivor's."""
    class Clock:
        t = 1000.0

        def __call__(self) -> float:
            return self.t

    ids = [f"p{i}" for i in range(PARTIES)]
    ctxs = contexts(SHAPE, parties=PARTIES, session="run", mask_degree=DEGREE, round=0)
    meta = MASK.session_meta(ctxs[0])
    updates = [MASK.encode_update(m, c) for m, c in zip(MATS, ctxs)]
    clock = Clock()
    agg = Aggregator(Store(tmp_path), {p: f"0x{i + 1:040x}" for i, p in enumerate(ids)}, protection="mask",
                     default_deadline=30.0, clock=clock)
    agg.open_session(SessionCreate(session_id="run", parties=ids, combiner="mask", meta=meta), "p0")
    gone = 7
    for i in range(PARTIES):
        if i != gone:
            agg.submit("run", 0, ids[i], updates[i])
    clock.t += 31.0
    agg.tick()
    near = neighbours("run", PARTIES, DEGREE, gone)
    for i in range(PARTIES):
        wanted = agg.recovery_wanted("run", 0, ids[i])
        assert wanted == ((["p7"], [ids[j] for j in near]) if i in near else None)
    for j in near:
        assert agg.aggregate("run", 0, ids[j]) is None
        agg.post_recovery("run", 0, ids[j], mask_recovery([gone], ctxs[j]))
    got = agg.aggregate("run", 0, "p0")
    assert got.contributors == tuple(p for p in ids if p != "p7")
    expected = np.sum([m for i, m in enumerate(MATS) if i != gone], axis=0, dtype=np.int64)
    assert np.array_equal(MASK.decode_aggregate(got.payload, ctxs[0]), expected)
