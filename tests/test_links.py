"""Links as a layer: the party runtime reaches the aggregator through a link, over HTTP to a real aggregator
process or in-process to the same app without a socket; both train the same model bit for bit, under ``none`` and
under ``mask`` (whose setup seals the consortium's secret through the session and whose rounds fold masked sums)."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from _texts import theme_texts, write_jsonl

from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.init import key_file_path
from fedtopic.corpus.training_data import load_training_data
from fedtopic.crypto.keys import load_party_keys
from fedtopic.errors import NetworkError
from fedtopic.links.inprocess import InProcessAggregator
from fedtopic.network.settings import AggregatorSettings
from fedtopic.node.link import AggregatorLink
from fedtopic.node.session_params import session_params
from fedtopic.node.sync_runtime import Connection, ProtectionSettings, run_sync_party
from fedtopic.simulation.aggregator_proc import AggregatorProcess
from fedtopic.simulation.local_consortium import local_consortium

SPEC = get_algorithm("csfed-lda").spec(3, 3, 1)


def _train(folder: Path, consortium: tuple, protection: str, link_for) -> list[dict[str, np.ndarray]]:
    """csfed-lda, 3 parties as threads through ``link_for(keys)``; every party's final state."""
    folder.mkdir(parents=True, exist_ok=True)
    corpus = write_jsonl(folder / "docs.jsonl", theme_texts(60, seed=5))
    data = load_training_data(dataset=None, corpus=corpus, n_parties=3, scheme="a", seed=0, progress=False)
    algo, spec = get_algorithm("csfed-lda"), SPEC
    config, cfg = consortium
    publics = [p.x25519_public_bytes for p in cfg.parties]
    params = session_params("csfed-lda", spec, data.train.vocab)
    parties = [algo.party(pid, i, data.parties[i], spec) for i, pid in enumerate(cfg.party_ids)]
    lock, errors = threading.Lock(), []

    def one(i: int) -> None:
        keys = load_party_keys(key_file_path(config.parent, cfg.party_ids[i]))
        conn = Connection(link_for(keys), cfg.party_ids, publics, cfg.parties[0].address,
                          ProtectionSettings(protection, 1024),
                          "links-s1", params, round_timeout=60.0)
        try:
            run_sync_party(parties[i], conn, algorithm="csfed-lda", compute_lock=lock)
        except BaseException as exc:  # raised below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and not any(t.is_alive() for t in threads), errors
    return [dict(p.state()) for p in parties]


@pytest.mark.parametrize("protection", ["none", "mask"])
def test_in_process_and_http_links_train_the_same_model(tmp_path, protection):
    consortium = local_consortium(tmp_path / "consortium", 3, SPEC, protection=protection, seed=1)
    settings = AggregatorSettings.from_consortium(consortium[1], tmp_path / "inproc-data")
    with InProcessAggregator(settings) as agg:
        local = _train(tmp_path / "inproc", consortium, protection,
                       lambda keys: AggregatorLink(agg.url, keys, 10.0, link="in-process"))
    with AggregatorProcess(consortium[0], tmp_path / "http-data", tmp_path / "agg.log") as proc:
        remote = _train(tmp_path / "http", consortium, protection, lambda keys: AggregatorLink(proc.url, keys, 10.0))
    for a, b in zip(local, remote):
        assert a.keys() == b.keys()
        for key in a:
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_the_in_process_aggregator_authenticates_as_over_http(tmp_path):
    """An unsigned request meets the same gate: 401 before any route, and the aggregator's status is public."""
    from fedtopic.network.client import AggregatorClient
    from fedtopic.network.errors import AggregatorRejected

    _, cfg = local_consortium(tmp_path / "c", 2, get_algorithm("csfed-lda").spec(2, 1), protection="none")
    with InProcessAggregator(AggregatorSettings.from_consortium(cfg, tmp_path / "data")) as agg:
        answer = agg.exchange("GET", "/v1/sessions/x", headers={})
        assert answer.status == 401
        keys = load_party_keys(key_file_path(tmp_path / "c", "p1"))
        client = AggregatorClient(agg.url, keys, "s1", link="in-process")
        assert client.status().parties == ["p1", "p2"]
        with pytest.raises(AggregatorRejected) as err:
            client.session_info()
        assert err.value.code == "unknown_session"
    with pytest.raises(Exception, match="closed"):
        agg.exchange("GET", "/status", headers={})
    with pytest.raises(NetworkError, match="no in-process aggregator"):  # shut down: the link no longer finds it
        AggregatorClient(agg.url, keys, "s1", link="in-process")
