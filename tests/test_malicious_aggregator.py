"""A malicious aggregator (the real one behind `_evil_aggregator`'s proxy) against real parties over HTTP: a
sealed secret it swaps for one of its own, or a setup meta it edits, stops every party it touched in one line
before any update leaves that party (the launcher signs every setup session: `crypto.setup_signature`); an
aggregate it changes for one party is caught by every party within one round (`crypto.witness`)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _csfed_setup import make_consortium, run_parties
from _evil_aggregator import EvilAggregator, Exchange

from fedtopic.crypto.codec import decode_counts, encode_counts
from fedtopic.crypto.protect.keyshare import new_mask_secret, share_mask_secret
from fedtopic.crypto.protect.mask import secret_commitment
from fedtopic.errors import AggregatorMisbehaved
from fedtopic.simulation.aggregator_proc import AggregatorProcess

pytestmark = [pytest.mark.adversarial, pytest.mark.xdist_group("csfed-aggregator")]


def _session_answer(seen: Exchange) -> dict | None:
    """The JSON of a session-info answer (GET /v1/sessions/{id}) that carries sealed mask secrets, else None."""
    if seen.method != "GET" or seen.status != 200 or seen.path.count("/") != 3 or "/sessions/" not in seen.path:
        return None
    info = json.loads(seen.answer)
    return info if any(k.startswith("mask_secret_") for k in info.get("params", {})) else None


def _updates_sent(agg: EvilAggregator, party: str) -> list[str]:
    return [e.path for e in agg.exchanges if e.party == party and e.method == "POST" and "/updates" in e.path]


def _stopped_by_the_check(result: object, party: str) -> None:
    assert isinstance(result, AggregatorMisbehaved), result
    text = str(result)
    assert "\n" not in text and f"{party}: setup session" in text and "not signed by the launcher p1" in text, text


def test_a_mask_secret_the_aggregator_swaps_for_its_own_is_refused_before_any_update(tmp_path):
    config, cfg = make_consortium(tmp_path / "c", protection="mask", deadline=4.0, iterations=2)
    victim = cfg.party("p2")
    own = new_mask_secret()  # the aggregator's: sealing needs only the victim's public key

    def swap(seen: Exchange) -> bytes | None:
        info = _session_answer(seen)
        if info is None or seen.party != "p2":
            return None
        sid = info["session_id"]
        sealed = share_mask_secret(own, {"p2": victim.x25519_public_bytes}, session=sid)["p2"]
        info["params"]["mask_secret_p2"] = sealed.hex()
        info["params"]["mask_commitment"] = info["meta"]["mask_commitment"] = secret_commitment(own)
        return json.dumps(info).encode()

    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as real, \
            EvilAggregator(real.url, swap) as evil:
        results = run_parties(config, cfg, evil.url)
    _stopped_by_the_check(results["p2"], "p2")
    assert _updates_sent(evil, "p2") == []
    assert any(e.party == "p2" and _session_answer(e) for e in evil.exchanges)  # the swap was served
    for pid in ("p1", "p3"):  # untouched: they go on without p2 at the straggler deadline
        assert isinstance(results[pid], dict) and results[pid]["rounds_without"].get("p2"), results[pid]


def test_a_setup_meta_the_aggregator_edits_stops_every_party_that_reads_it(tmp_path):
    config, cfg = make_consortium(tmp_path / "c", protection="mask", deadline=4.0, iterations=2)

    def edit(seen: Exchange) -> bytes | None:
        info = _session_answer(seen)
        if info is None:
            return None
        info["meta"]["mask_degree"] = 0  # a graph without pairwise masks: the self masks alone
        return json.dumps(info).encode()

    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as real, \
            EvilAggregator(real.url, edit) as evil:
        results = run_parties(config, cfg, evil.url)
    for pid in ("p2", "p3"):  # the launcher opened the session and never read it back
        _stopped_by_the_check(results[pid], pid)
        assert _updates_sent(evil, pid) == []


def test_an_aggregate_changed_for_one_party_is_caught_by_every_party_within_one_round(tmp_path):
    """Equivocation: round 1 of the counts session reaches p2 with one cell changed (a well-formed aggregate it
    decodes and trains on). At round 2 every party reads the witnesses of round 1: p2 finds the others' digests
    differ from its own, p1 and p3 find p2's witness missing (the real aggregator refused it: it served another
    aggregate than it holds, which the proxy hides from p2). Each stops in one line naming round 1."""
    config, cfg = make_consortium(tmp_path / "c", protection="none", iterations=4)
    changed: list[str] = []

    def forge(seen: Exchange) -> bytes | None:
        counts_round_1 = "-counts/rounds/1/" in seen.path and ("/aggregate" in seen.path or "/updates" in seen.path)
        if counts_round_1 and seen.party == "p2" and seen.status == 200:
            total = decode_counts(seen.answer).astype(np.int64)  # under none: the sparse count codec as it is
            total[0, 0] += 1
            changed.append(seen.path)
            return encode_counts(total)
        if seen.party == "p2" and "/witness" in seen.path and seen.method == "POST" and seen.status == 422:
            return 200, json.dumps({"party": "p2", **json.loads(seen.body)}).encode()  # "kept", it tells p2
        return None

    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as real, \
            EvilAggregator(real.url, forge) as evil:
        results = run_parties(config, cfg, evil.url)
    assert changed, "the forged aggregate was never served"
    for pid in cfg.party_ids:
        err = results[pid]
        assert isinstance(err, AggregatorMisbehaved), (pid, err)
        text = str(err)
        assert "\n" not in text and text.startswith(f"{pid}: round 1 of session") and "-counts" in text, text
    assert "differs from the one" in str(results["p2"])
    assert all("no witness" in str(results[p]) and "p2" in str(results[p]) for p in ("p1", "p3"))
