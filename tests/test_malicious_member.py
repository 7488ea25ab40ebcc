"""A malicious member against a real aggregator process: an update whose header names another party's index
(which used to be answered 202 and then failed the round's combine for everyone) is refused at submission with
422 and nothing is stored; the member is named in /status, and the honest parties go on without it at the
straggler deadline under `mask` (a dropout, with recovery), each history saying so."""

from __future__ import annotations

import struct
import threading
import time
from dataclasses import dataclass

import httpx
import numpy as np
import pytest
from _csfed_setup import make_consortium, run_parties

from fedtopic.crypto.protect.base import UPDATE_MAGIC
from fedtopic.network.client import AggregatorClient, AggregatorRejected
from fedtopic.node.link import AggregatorLink
from fedtopic.runs.history import FILE_NAME, latest_per_round, read_history
from fedtopic.simulation.aggregator_proc import AggregatorProcess

pytestmark = [pytest.mark.adversarial, pytest.mark.xdist_group("agg-malicious_member")]
WHO = struct.calcsize("<4sBB")  # the header's party index: after the magic, version and scheme code


class _ForgingClient(AggregatorClient):
    """A member's client that files every protected update under party index 0."""

    def exchange(self, round, payload, timeout, **kwargs):  # noqa: A002 - the protocol's name
        if payload[:4] == UPDATE_MAGIC:
            payload = payload[:WHO] + struct.pack("<H", 0) + payload[WHO + 2:]
        return super().exchange(round, payload, timeout, **kwargs)


@dataclass(frozen=True)
class _ForgingLink(AggregatorLink):
    def session(self, session, *, patience=None, timeout=None):
        return _ForgingClient(self.url, self.keys, session, patience=self.patience if patience is None else patience,
                              roster=self.roster, link=self.link, **({} if timeout is None else {"timeout": timeout}))


def test_an_update_filed_under_another_index_is_refused_and_the_others_go_on_without_its_sender(tmp_path,
                                                                                                monkeypatch):
    # a deadline past the nodes' first long-poll (WAIT_REPORT_SECONDS, 3 s here for time): they read the round's
    # state while waiting
    monkeypatch.setattr("fedtopic.network.client.WAIT_REPORT_SECONDS", 3.0)
    config, cfg = make_consortium(tmp_path / "c", protection="mask", deadline=5.0, iterations=1)
    monkeypatch.setattr("fedtopic.node.sync_node.AggregatorLink",
                        lambda url, keys, *rest: (_ForgingLink if keys.party_id == "p2" else AggregatorLink)(
                            url, keys, *rest))
    named: list[str] = []
    done = threading.Event()
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        def watch() -> None:
            while not done.is_set():
                for sess in httpx.get(f"{agg.url}/status", timeout=10).json()["sessions"]:
                    named.extend(why for p, why in sess["current_round"]["refused_updates"].items() if p == "p2")
                time.sleep(0.2)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        results = run_parties(config, cfg, agg.url)
        done.set()
        watcher.join(30)
    forger = results["p2"]
    assert isinstance(forger, AggregatorRejected) and forger.status == 422, forger
    assert "names party index 0" in str(forger) and "sender is party index 1" in str(forger)
    assert named and "refused" in named[0] and "party index 0" in named[0], named
    for pid in ("p1", "p3"):
        summary = results[pid]
        assert isinstance(summary, dict), summary
        assert summary["rounds_without"].get("p2", 0) >= 1, summary
        rows = latest_per_round(read_history(config.parent / "state" / pid / FILE_NAME))
        assert rows and all(r["contributors"] is None or "p2" not in r["contributors"] for r in rows)
        with np.load(config.parent / "state" / pid / "model" / "model.npz") as npz:
            assert np.isfinite(npz["phi"]).all()
