"""DAFed-LDA in one process over the in-memory board: asynchrony, CP consortia, quality."""

from __future__ import annotations

import numpy as np
import pytest

from fedtopic.algorithms.asynchronous import ChannelSnapshot
from fedtopic.algorithms.lda.family import train_centralized
from fedtopic.algorithms.lda.options import LDAHyper
from fedtopic.algorithms.lda.party import LDAParty, aggregate_others
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.init import cp_from_consortia
from fedtopic.corpus.synthetic import generate_synthetic
from fedtopic.eval.perplexity import completion_perplexity
from fedtopic.links.memory import InMemoryBoard
from fedtopic.simulation.threads import run_simulation


@pytest.fixture(scope="module")
def data():
    return generate_synthetic(n_parties=4, n_topics=8, n_shared=4, n_words=400, docs_per_party=150, doc_length=60, seed=3)


def _spec(**kw):
    return get_algorithm("dafed-lda").spec(kw.pop("topics"), kw.pop("iterations"), kw.pop("seed"), kw)


def _simulate(parts, spec, cp, **kw):
    board = InMemoryBoard(cp)
    shape = (parts[0].n_words, spec.topics)
    transports = [board.channel(f"p{i + 1}", shape) for i in range(len(parts))]
    return run_simulation(parts, spec, transports, cp, **({"algorithm": "dafed-lda"} | kw)), transports


def test_aggregate_others_is_eq8_without_own_term():
    a = ChannelSnapshot("a", 1, np.array([[1, 2], [3, 4]], dtype=np.int32))
    b = ChannelSnapshot("b", 0, np.array([[0, 5], [1, 0]], dtype=np.int32))
    wk, k = aggregate_others([a, b], 2, 2)
    assert wk.tolist() == [[1, 7], [4, 4]] and k.tolist() == [5, 11]
    with pytest.raises(ValueError, match="shape"):
        aggregate_others([a], 3, 2)


def test_party_round_keeps_own_counts_consistent(data):
    hyper = LDAHyper(n_topics=8, iterations=3, seed=1)
    party = LDAParty("p1", data.parties[0], hyper, steps=2)
    genesis = party.genesis()
    assert genesis.sum() == data.parties[0].n_tokens
    other = ChannelSnapshot("p2", 0, np.ones_like(genesis))
    report = party.train_round([other])
    assert report.round == 1 and report.sweeps == 2 and report.staleness == {"p2": 0}
    assert report.n_wk.sum() == data.parties[0].n_tokens
    # Φ_Σ uses own + others' counts (Eq. 8–9)
    assert np.array_equal(party.global_counts(), report.n_wk.astype(np.int64) + 1)


def test_dafed_close_to_centralized_and_staleness_is_recorded(data):
    hyper = LDAHyper(n_topics=8, iterations=40, alpha=0.5, seed=7)
    ids = [f"p{i + 1}" for i in range(4)]
    spec = _spec(topics=8, iterations=40, seed=7, alpha=0.5)
    sim, transports = _simulate(data.parties, spec, cp_from_consortia([ids]), max_delay=0.01)
    test = data.merged()
    central = train_centralized(data.parties, hyper)
    ppl_central = completion_perplexity(central.phi(), test, 0.5, iterations=30, seed=0)
    ppl_dafed = [completion_perplexity(p.phi(), test, 0.5, iterations=30, seed=0) for p in sim.parties]
    assert max(ppl_dafed) < 1.05 * ppl_central
    assert max(log.sweeps for log in sim.logs) == 40
    assert {log.stopped_by for log in sim.logs} <= {"max-iterations", "fastest-party-finished"}
    assert all(log.staleness for log in sim.logs) and all(log.bytes_sent > 0 for log in sim.logs)
    assert all(t.bytes_received() > 0 for t in transports)


def test_fig5_consortia_train_separate_models(data):
    # con1 = {p1, p2}, con2 = {p3, p4}: nobody reads across consortia (CP, Def. 4)
    cp = cp_from_consortia([["p1", "p2"], ["p3", "p4"]])
    sim, _ = _simulate(data.parties, _spec(topics=8, iterations=5, seed=2), cp)
    by_id = {p.party_id: p for p in sim.parties}
    n1 = by_id["p1"].global_counts()
    n3 = by_id["p3"].global_counts()
    assert n1.sum() == data.parties[0].n_tokens + data.parties[1].n_tokens
    assert n3.sum() == data.parties[2].n_tokens + data.parties[3].n_tokens


def test_board_refuses_a_round_going_backwards():
    board = InMemoryBoard({"p1": []})
    ch = board.channel("p1", (2, 2))
    ch.publish(0, np.zeros((2, 2), dtype=np.int32))
    ch.publish(1, np.zeros((2, 2), dtype=np.int32))
    with pytest.raises(ValueError, match="round 1 published after round 1"):
        ch.publish(1, np.zeros((2, 2), dtype=np.int32))


def test_virtual_schedule_is_reproducible_and_really_asynchronous(data):
    from fedtopic.simulation.virtual_async import run_virtual_simulation

    ids = [f"p{i + 1}" for i in range(4)]
    spec = _spec(topics=8, iterations=12, seed=5)
    parts = [data.parties[0], data.parties[1].subset(np.arange(40)), data.parties[2], data.parties[3]]

    def run():
        return run_virtual_simulation(parts, spec, ids, cp_from_consortia([ids]), max_delay=0.004)

    a, b = run(), run()
    assert [log.staleness for log in a.logs] == [log.staleness for log in b.logs]
    assert all(np.array_equal(pa.global_counts(), pb.global_counts()) for pa, pb in zip(a.parties, b.parties))
    # the small party (p2) is fastest: it finishes, the others lag behind it (positive staleness of p2 is negative)
    assert a.logs[1].stopped_by == "max-iterations"
    assert max(log.sweeps for log in a.logs) == 12 and min(log.sweeps for log in a.logs) < 12
    assert any(s != 0 for log in a.logs for s in log.staleness)
    assert all(log.bytes_received > 0 for log in a.logs)
