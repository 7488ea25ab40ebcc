"""A malicious aggregator (the real one behind `_evil_aggregator`'s proxy) against real parties over HTTP: a
sealed secret it swaps for one of its own, or a setup meta it edits, stops every party it touched in one line
before any update leaves that party (the launcher signs every setup session: `crypto.setup_signature`); an
aggregate it changes for one party is caught by every party within one round (`crypto.witness`); an older one it
replays to a party stops that party before it trains on it; an update it drops leaves its party out of that round,
visibly in every party's history."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _csfed_setup import make_consortium, run_parties
from _evil_aggregator import EvilAggregator, Exchange

from fedtopic.consortium.config import save_consortium
from fedtopic.consortium.init import key_file_path
from fedtopic.crypto.codec import decode_counts, encode_counts
from fedtopic.crypto.keys import load_party_keys
from fedtopic.crypto.protect.keyshare import new_mask_secret, share_mask_secret
from fedtopic.crypto.protect.mask import secret_commitment
from fedtopic.errors import AggregatorMisbehaved, TrainingError
from fedtopic.network.client import AggregatorClient
from fedtopic.node.dense_session import WITNESS_EVERY
from fedtopic.runs.history import FILE_NAME, latest_per_round, read_history
from fedtopic.simulation.aggregator_proc import AggregatorProcess

pytestmark = [pytest.mark.adversarial, pytest.mark.xdist_group("agg-malicious_aggregator")]


def _session_answer(seen: Exchange) -> dict | None:
    """The JSON of a session-info answer (GET /v1/sessions/{id}) that carries sealed mask secrets, else None."""
    if seen.method != "GET" or seen.status != 200 or seen.path.count("/") != 3 or "/sessions/" not in seen.path:
        return None
    info = json.loads(seen.answer)
    return info if any(k.startswith("mask_secret_") for k in info.get("params", {})) else None


def _updates_sent(agg: EvilAggregator, party: str) -> list[str]:
    return [e.path for e in agg.exchanges if e.party == party and e.method == "POST" and "/updates" in e.path]


def _equivocate(tmp_path, config, cfg, change) -> dict:  # noqa: ANN001 - the test's consortium and its edit
    """The parties through the real aggregator behind a proxy that gives p2 ``change(exchange)`` (bytes) in place
    of an aggregate, and hides from p2 that the real aggregator then refuses its witness; every party's result."""
    changed: list[str] = []
    upstream: list[str] = []
    p2_keys = load_party_keys(key_file_path(config.parent, "p2"))

    def forge(seen: Exchange) -> bytes | tuple[int, bytes] | None:
        if seen.party == "p2" and seen.status == 200:
            edited = change(seen)
            if edited is not None:
                changed.append(seen.path)
                return edited
        return _hide_the_refusal(seen, "p2", upstream[0], p2_keys)

    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as real, \
            EvilAggregator(real.url, forge) as evil:
        upstream.append(real.url)
        results = run_parties(config, cfg, evil.url)
    assert changed, "the forged aggregate was never served"
    return results


def _hide_the_refusal(seen: Exchange, victim: str, upstream: str, keys: object) -> tuple[int, bytes] | None:
    """The real aggregator refused the victim's witness (it served another aggregate than it holds): answer
    "kept", with the real witnesses of the span the victim asked to check, as an aggregator that hides only this."""
    if seen.party != victim or "/witness" not in seen.path or seen.method != "POST" or seen.status != 422:
        return None
    sid = seen.path.split("/sessions/")[1].split("/")[0]
    check = json.loads(seen.body).get("check")
    with AggregatorClient(upstream, keys, sid) as c:
        first, last = check or (0, 0)
        earlier = c._send("GET", f"/v1/sessions/{sid}/witnesses", params={"first": first, "last": last}).json()
    return 200, json.dumps(earlier | ({} if check else {"witnesses": []})).encode()


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
    def change(seen: Exchange) -> bytes | None:
        if "-counts/rounds/1/" in seen.path and ("/aggregate" in seen.path or "/updates" in seen.path):
            total = decode_counts(seen.answer).astype(np.int64)  # under none: the sparse count codec as it is
            total[0, 0] += 1
            return encode_counts(total)
        return None

    results = _equivocate(tmp_path, config, cfg, change)
    for pid in cfg.party_ids:
        err = results[pid]
        assert isinstance(err, AggregatorMisbehaved), (pid, err)
        text = str(err)
        assert "\n" not in text and text.startswith(f"{pid}: round 1 of session") and "-counts" in text, text
    assert "differs from the one" in str(results["p2"])
    assert all("no witness" in str(results[p]) and "p2" in str(results[p]) for p in ("p1", "p3"))


def test_an_older_aggregate_replayed_to_one_party_stops_it_before_it_trains_on_it(tmp_path):
    """Reordering: p2 is served round 1's aggregate again as round 2's (well formed: under `none` it decodes). p2
    stops in one line naming round 2 (the sum is below what it published itself), before any sweep on it; the
    others, whose aggregates were honest, go on without it at the straggler deadline (docs/security.md: the
    limits, a victim the aggregator also drops)."""
    config, cfg = make_consortium(tmp_path / "c", protection="none", iterations=5, deadline=4.0)
    kept: dict[int, bytes] = {}

    def replay(seen: Exchange) -> bytes | tuple[int, bytes] | None:
        if "-counts/rounds/" not in seen.path or seen.party != "p2":
            return None
        rnd = int(seen.path.split("/rounds/")[1].split("/")[0])
        if seen.status == 200 and ("/aggregate" in seen.path or "/updates" in seen.path):
            kept.setdefault(rnd, seen.answer)
            if rnd == 2 and 1 in kept:
                return kept[1]
        return None

    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as real, \
            EvilAggregator(real.url, replay) as evil:
        results = run_parties(config, cfg, evil.url)
    victim = results["p2"]
    assert isinstance(victim, TrainingError) and "round 2" in str(victim) and "\n" not in str(victim), victim
    for pid in ("p1", "p3"):
        assert isinstance(results[pid], dict) and results[pid]["rounds_without"].get("p2"), results[pid]


def test_a_dropped_update_leaves_its_party_out_of_that_round_visibly_and_the_run_goes_on(tmp_path):
    """Dropping: p3's update for round 1 never reaches the real aggregator (the proxy says it took it). The round
    closes at the straggler deadline without p3, which every party's history records; nothing else changes."""
    config, cfg = make_consortium(tmp_path / "c", protection="none", iterations=3, deadline=3.0)

    def drop(method: str, path: str, party: str | None, body: bytes) -> tuple[int, bytes] | None:
        if party == "p3" and method == "POST" and "-counts/rounds/1/updates" in path:
            sid = path.split("/sessions/")[1].split("/")[0]
            return 202, json.dumps({"session_id": sid, "round": 1, "party": "p3", "sha256": "0" * 64,
                                    "bytes": len(body), "received": ["p3"], "missing": [],
                                    "round_closed": False}).encode()
        return None

    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as real, \
            EvilAggregator(real.url, lambda seen: None, drop) as evil:
        results = run_parties(config, cfg, evil.url)
    for pid in cfg.party_ids:
        assert isinstance(results[pid], dict), (pid, results[pid])
        rows = latest_per_round(read_history(config.parent / "state" / pid / FILE_NAME))
        without = [r["round"] for r in rows if r.get("contributors") and "p3" not in r["contributors"]]
        assert without, (pid, [(r["round"], r.get("contributors")) for r in rows])
    assert results["p1"]["rounds_without"].get("p3") == 1


def test_a_dense_aggregate_changed_for_one_party_is_caught_when_its_span_is_witnessed(tmp_path):
    """Equivocation in a dense session (FedNMF: a round per step, witnessed 32 rounds at a time): round 2's
    aggregate reaches p2 with the last bit of one value flipped. When the span 0-31 is checked (the parties' next
    witness, here at their last), p2 finds the others' digest for round 2 differs from its own and p1 and p3 find
    p2's witness of round 31 missing (the real aggregator refused it; the proxy hides that from p2)."""
    config, cfg = make_consortium(tmp_path / "c", protection="none", iterations=WITNESS_EVERY + 4)
    cfg = cfg.model_copy(update={"algorithm": cfg.algorithm.model_copy(update={
        "name": "fednmf", "options": {"fraction": 1.0, "local_epochs": 1}})})
    save_consortium(cfg, config)
    def change(seen: Exchange) -> bytes | None:
        if "/rounds/2/" in seen.path and ("/aggregate" in seen.path or "/updates" in seen.path) and seen.answer:
            flipped = bytearray(seen.answer)
            flipped[-8] ^= 1  # the lowest mantissa bit of the last float64 value: well formed, decodes, trains
            return bytes(flipped)
        return None

    results = _equivocate(tmp_path, config, cfg, change)
    text = {pid: str(results[pid]) for pid in cfg.party_ids}
    assert all(isinstance(results[p], AggregatorMisbehaved) and "\n" not in text[p] for p in cfg.party_ids), text
    assert text["p2"].startswith("p2: round 2 of session") and "differs from the one" in text["p2"], text
    for pid in ("p1", "p3"):
        assert text[pid].startswith(f"{pid}: round {WITNESS_EVERY - 1} of session"), text
        assert "no witness" in text[pid] and "p2" in text[pid], text
