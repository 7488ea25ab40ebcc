"""A party killed mid-training resumes from its checkpoint: no round twice, none skipped, same model."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from fedtopic.algorithms.lda.options import LDAHyper
from fedtopic.algorithms.lda.party import LDAParty
from fedtopic.corpus.synthetic import generate_synthetic
from fedtopic.errors import TrainingError
from fedtopic.links.memory import InMemoryBoard
from fedtopic.node.async_loop import run_party
from fedtopic.node.checkpoint import save_checkpoint


class RecordingChannel:
    """Wraps a board channel and records every published round (the board itself refuses repeats)."""

    def __init__(self, inner):
        self.inner, self.party_id, self.rounds = inner, inner.party_id, []

    def publish(self, round, n_wk):
        size = self.inner.publish(round, n_wk)
        self.rounds.append(round)
        return size

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.fixture()
def corpus():
    return generate_synthetic(n_parties=1, n_topics=5, n_shared=5, n_words=200, docs_per_party=60, doc_length=40, seed=1).parties[0]


HYPER = LDAHyper(n_topics=5, iterations=6, seed=4)


def _run(corpus, channel, path, max_sweeps):
    party = LDAParty("p1", corpus, HYPER)
    log = run_party(party, channel, readable={"p1"}, max_sweeps=max_sweeps, stop=threading.Event(), checkpoint=path, algorithm="dafed-lda")
    return party, log


def test_resume_continues_the_same_chain(tmp_path, corpus):
    straight, _ = _run(corpus, RecordingChannel(InMemoryBoard({"p1": []}).channel("p1", (200, 5))), tmp_path / "a.npz", 6)
    channel = RecordingChannel(InMemoryBoard({"p1": []}).channel("p1", (200, 5)))
    _run(corpus, channel, tmp_path / "b.npz", 3)
    resumed, log = _run(corpus, channel, tmp_path / "b.npz", 6)
    assert channel.rounds == [0, 1, 2, 3, 4, 5, 6]
    assert log.stopped_by == "max-iterations" and resumed.round == 6
    assert np.array_equal(resumed.own_counts(), straight.own_counts())


@pytest.mark.parametrize("crash_after_publish", [False, True])
def test_crash_around_a_publication(tmp_path, corpus, crash_after_publish):
    path = tmp_path / "c.npz"
    channel = RecordingChannel(InMemoryBoard({"p1": []}).channel("p1", (200, 5)))
    party, _ = _run(corpus, channel, path, 2)
    report = party.train_round([])  # round 3 computed ...
    save_checkpoint(path, party, published=False)  # ... marked pending ...
    if crash_after_publish:
        channel.publish(report.round, report.n_wk)  # ... and published, then the process dies
    _, log = _run(corpus, channel, path, 4)
    assert channel.rounds == [0, 1, 2, 3, 4]


def test_checkpoint_of_another_corpus_is_refused(tmp_path, corpus):
    path = tmp_path / "d.npz"
    _run(corpus, InMemoryBoard({"p1": []}).channel("p1", (200, 5)), path, 1)
    other = corpus.subset(np.arange(10))
    with pytest.raises(TrainingError, match="does not match"):
        run_party(LDAParty("p1", other, HYPER), InMemoryBoard({"p1": []}).channel("p1", (200, 5)), readable={"p1"}, max_sweeps=2,
                  stop=threading.Event(), checkpoint=path, algorithm="dafed-lda")
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(TrainingError, match="unreadable"):
        run_party(LDAParty("p1", corpus, HYPER), InMemoryBoard({"p1": []}).channel("p1", (200, 5)), readable={"p1"}, max_sweeps=2,
                  stop=threading.Event(), checkpoint=path, algorithm="dafed-lda")


def test_checkpoint_with_assignments_out_of_range_is_refused(tmp_path, corpus):
    path = tmp_path / "e.npz"
    _run(corpus, InMemoryBoard({"p1": []}).channel("p1", (200, 5)), path, 1)
    with np.load(path) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["z"][3] = 99  # K = 5; the kernels index counts with z unchecked
    np.savez(path, **arrays)
    with pytest.raises(TrainingError, match="corrupt.*topic assignments"):
        run_party(LDAParty("p1", corpus, HYPER), InMemoryBoard({"p1": []}).channel("p1", (200, 5)), readable={"p1"}, max_sweeps=2,
                  stop=threading.Event(), checkpoint=path, algorithm="dafed-lda")


def test_a_party_that_comes_late_stops_with_the_fastest_and_says_how_short_it_is(corpus):
    """DAFed's rule (the fastest party's last round ends everyone's training): a party whose peer already published
    its last round trains no more and its log says how much of its planned training it did."""
    board = InMemoryBoard({"p1": ["p2"], "p2": ["p1"]})
    fast = board.channel("p2", (200, 5))
    for rnd in range(5):  # p2 already went through all four sweeps
        fast.publish(rnd, np.zeros((200, 5), dtype=np.int32))
    log = run_party(LDAParty("p1", corpus, HYPER), board.channel("p1", (200, 5)), readable={"p2"}, max_sweeps=4,
                    stop=threading.Event(), algorithm="dafed-lda", genesis_timeout=5)
    assert log.stopped_by == "fastest-party-finished" and log.sweeps == 0 and log.planned_sweeps == 4
