"""A session that is over takes nothing more, and says so before it looks at a body: an update to a finished
session and a vocabulary to an abandoned one are refused 409 ``session_ended`` (not parsed into a 422), through the
aggregator's own app with signed requests (issue "Hardening round 3", item 6); a party's own update sent again (a
restart after the end) is still the duplicate it was, so a restarted party reads its aggregate."""

from __future__ import annotations

import numpy as np
import pytest

from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.init import key_file_path
from fedtopic.crypto.codec import encode_counts
from fedtopic.crypto.keys import load_party_keys
from fedtopic.links.inprocess import InProcessAggregator
from fedtopic.network.client import AggregatorClient
from fedtopic.network.errors import AggregatorRejected
from fedtopic.network.settings import AggregatorSettings
from fedtopic.simulation.local_consortium import local_consortium


@pytest.fixture()
def aggregator(tmp_path):
    config, cfg = local_consortium(tmp_path / "c", 2, get_algorithm("csfed-lda").spec(2, 1), protection="none")
    with InProcessAggregator(AggregatorSettings.from_consortium(cfg, tmp_path / "data")) as agg:
        clients = {p: AggregatorClient(agg.url, load_party_keys(key_file_path(config.parent, p)), "s",
                                       link="in-process", patience=0) for p in cfg.party_ids}
        yield clients


def test_an_update_to_a_finished_session_is_refused_as_finished(aggregator):
    c1, c2 = aggregator["p1"], aggregator["p2"]
    c1.open_session(["p1", "p2"], combiner="none", meta={"shape": [2, 2]})
    for c in (c1, c2):
        c.submit(0, encode_counts(np.ones((2, 2), dtype=np.int32)))
    c1.finished()
    c2.finished()
    again = c1.submit(0, encode_counts(np.ones((2, 2), dtype=np.int32)))  # its own update, resent after a restart:
    assert again.round_closed and again.received == ["p1", "p2"]  # a duplicate, whose aggregate it may read
    for body in (b"garbage, not a count matrix", encode_counts(np.ones((2, 2), dtype=np.int32))):
        with pytest.raises(AggregatorRejected) as err:
            c1.submit(1, body)
        assert (err.value.status, err.value.code) == (409, "session_ended") and "finished" in err.value.reason


def test_a_vocabulary_to_an_abandoned_session_is_refused_before_it_is_parsed(aggregator):
    c1, c2 = aggregator["p1"], aggregator["p2"]
    c1.open_session(["p1", "p2"], combiner="vocabulary", meta={})
    c1.post_vocabulary(["apple", "pear"])
    c2.abandon()
    with pytest.raises(AggregatorRejected) as err:
        c1.post_vocabulary([f"w{i}" for i in range(600_000)])
    assert (err.value.status, err.value.code) == (409, "session_ended") and "abandoned" in err.value.reason
    raw = c1._send("POST", "/v1/sessions/s/vocabulary", body=b'{"words": 7}')  # not a vocabulary: still 409 first
    assert raw.status == 409 and raw.json()["code"] == "session_ended"
