"""The real aggregator over HTTP: uvicorn subprocess, client processes, every rejection, stragglers, kill -9."""

from __future__ import annotations

import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pytest
from _aggregator_proc import child_env

from fedtopic.consortium.config import load_consortium, save_consortium
from fedtopic.consortium.init import init_consortium
from fedtopic.crypto.codec import decode_counts, encode_counts
from fedtopic.crypto.keys import PartyKeys, generate_party_keys, load_party_keys
from fedtopic.ledger.local_nodes import free_port
from fedtopic.network.client import AggregatorClient
from fedtopic.network.dense import encode_dense
from fedtopic.network.errors import AggregatorRejected
from fedtopic.network.wire import request_headers, update_headers
from fedtopic.simulation.aggregator_proc import AggregatorProcess

SHAPE = (6, 3)
PIDS = ["p1", "p2", "p3"]
MAX_BODY = 16 * 1024


@dataclass
class Consortium:
    config: Path
    key_paths: dict[str, Path]
    keys: dict[str, PartyKeys]


@pytest.fixture(scope="module")
def consortium(tmp_path_factory) -> Consortium:
    out = tmp_path_factory.mktemp("consortium")
    res = init_consortium(3, out, seed=11)
    cfg = load_consortium(res.config_path)  # plain sessions: the aggregator's mechanics, not a protection's
    save_consortium(cfg.model_copy(update={"aggregator": cfg.aggregator.model_copy(update={"protection": "none"})}),
                    res.config_path)
    return Consortium(res.config_path, res.key_paths, {p: load_party_keys(k) for p, k in res.key_paths.items()})


@pytest.fixture(scope="module")
def server(consortium, tmp_path_factory):
    work = tmp_path_factory.mktemp("aggregator")
    proc = AggregatorProcess(consortium.config, work / "data", work / "server.log",
                             extra_args=("--max-body-mb", str(MAX_BODY / 2**20)))
    yield proc
    proc.stop()


def counts(party: str, round: int) -> np.ndarray:
    """The deterministic N_p a test party sends in a round."""
    rng = np.random.default_rng([int(party[1:]), round])
    return rng.integers(0, 20, SHAPE) * (rng.random(SHAPE) < 0.5)


CHILD = r"""
import sys, numpy as np
from fedtopic.crypto.codec import encode_counts, decode_counts
from fedtopic.crypto.keys import load_party_keys
from fedtopic.network.client import AggregatorClient
url, keyfile, pid = sys.argv[1:4]
with AggregatorClient(url, load_party_keys(keyfile), "procs") as c:
    c.open_session(["p1", "p2", "p3"], combiner="none", meta={"shape": [6, 3]}, params={"alpha": 2.5})
    c.post_vocabulary(["w%s" % pid, "shared"])
    print("vocab", ",".join(c.wait_vocabulary(20)))
    for r in range(3):
        rng = np.random.default_rng([int(pid[1:]), r])
        c.submit(r, encode_counts(rng.integers(0, 20, (6, 3)) * (rng.random((6, 3)) < 0.5)))
        print("round", r, int(decode_counts(c.wait_aggregate(r, 30)).sum()))
"""


def test_three_parties_as_processes_run_three_rounds(server, consortium) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, server.url, str(consortium.key_paths[p]), p],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
             for p in PIDS]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(out.splitlines())
    for lines in outs:
        assert lines[0] == "vocab shared,wp1,wp2,wp3"
        assert lines[1:] == [f"round {r} {sum(int(counts(p, r).sum()) for p in PIDS)}" for r in range(3)]
    with AggregatorClient(server.url, consortium.keys["p2"], "procs") as c:
        for r in range(3):
            got = c.fetch_aggregate(r, timeout=5)
            assert got.contributors == tuple(PIDS) and got.missing == () and got.close_reason == "complete"
            np.testing.assert_array_equal(decode_counts(got.payload), sum(counts(p, r) for p in PIDS))
        assert c.session_info().params == {"alpha": 2.5}
        assert c.round(3).state == "open"


class _Impostor:
    """Claims to be p1 but holds p2's key."""

    party_id = "p1"

    def __init__(self, key: bytes) -> None:
        self.eth_private_key = key


def _rejected(call, status: int, code: str) -> AggregatorRejected:
    with pytest.raises(AggregatorRejected) as exc:
        call()
    assert (exc.value.status, exc.value.code) == (status, code), exc.value
    assert exc.value.reason
    return exc.value


def test_every_rejection_is_4xx_and_stores_nothing(server, consortium) -> None:
    k = consortium.keys
    c1 = AggregatorClient(server.url, k["p1"], "rej", patience=0)
    _rejected(lambda: c1.open_session(PIDS, combiner="rot13", meta={"shape": list(SHAPE)}), 422, "unknown_combiner")
    # the toml's protection (none) is the default combiner: its meta needs a shape
    _rejected(lambda: c1.open_session(PIDS, meta={"shape": "6x3"}), 422, "invalid_meta")
    c1.open_session(PIDS, combiner="none", meta={"shape": list(SHAPE)})
    good = encode_counts(counts("p1", 0))

    outsider = AggregatorClient(server.url, generate_party_keys("p9", seed=b"x"), "rej", patience=0)
    _rejected(lambda: outsider.submit(0, good), 401, "unknown_party")
    impostor = AggregatorClient(server.url, _Impostor(k["p2"].eth_private_key), "rej", patience=0)
    _rejected(lambda: impostor.submit(0, good), 401, "bad_signature")
    _rejected(lambda: c1.submit(1, good), 409, "wrong_round")
    _rejected(lambda: c1.submit(0, encode_counts(np.ones((7, 3), int))), 422, "invalid_payload")
    _rejected(lambda: c1.submit(0, b"\x00" * 100), 422, "invalid_payload")

    path = "/v1/sessions/rej/rounds/0/updates"
    big = b"\x01" * (MAX_BODY + 1)
    r = httpx.post(server.url + path, content=big, headers=update_headers(k["p1"], "rej", 0, big))
    assert (r.status_code, r.json()["code"]) == (413, "payload_too_large")
    chunked = httpx.post(server.url + path, content=iter([b"\x01" * 4096] * 8),
                         headers=update_headers(k["p1"], "rej", 0, b"\x01" * 32768))
    assert (chunked.status_code, chunked.json()["code"]) == (413, "payload_too_large")
    assert c1.round(0).received == []  # nothing above was stored

    headers = update_headers(k["p1"], "rej", 0, good)
    first = httpx.post(server.url + path, content=good, headers=headers)
    assert first.status_code == 202 and first.json()["received"] == ["p1"]
    replay = httpx.post(server.url + path, content=good, headers=headers)
    assert (replay.status_code, replay.json()["code"]) == (409, "duplicate_update")
    _rejected(lambda: c1.submit(0, encode_counts(counts("p1", 5))), 409, "duplicate_update")
    assert c1.submit(0, good).received == ["p1"]  # our own update again: idempotent, not an error

    get_headers = request_headers(k["p2"], "GET", "/v1/sessions/rej")
    assert httpx.get(server.url + "/v1/sessions/rej", headers=get_headers).status_code == 200
    again = httpx.get(server.url + "/v1/sessions/rej", headers=get_headers)
    assert (again.status_code, again.json()["code"]) == (409, "replayed_request")
    assert httpx.get(server.url + "/v1/sessions/rej").json()["code"] == "unsigned"

    dense = AggregatorClient(server.url, k["p2"], "rej-dense", patience=0)
    dense.open_session(PIDS, combiner="dense-sum", meta={"shape": [2, 2], "dtype": "float64", "nonnegative": True})
    rej = _rejected(lambda: dense.submit(0, encode_dense(np.array([[1.0, np.nan], [0, 0]]))), 422, "invalid_payload")
    assert "NaN" in rej.reason
    rej = _rejected(lambda: dense.submit(0, encode_dense(np.array([[1.0, -3.0], [0, 0]]))), 422, "invalid_payload")
    assert "negative" in rej.reason
    assert dense.round(0).received == [] and c1.round(0).received == ["p1"]
    _rejected(lambda: dense.wait_aggregate(7, timeout=0.1), 409, "round_not_open")
    for c in (c1, outsider, impostor, dense):
        c.close()


def test_straggler_deadline_closes_the_round_and_says_so(server, consortium) -> None:
    clients = {p: AggregatorClient(server.url, consortium.keys[p], "slow") for p in PIDS}
    clients["p1"].open_session(PIDS, combiner="none", meta={"shape": list(SHAPE)}, straggler_deadline_seconds=1.5)
    threads = [threading.Thread(target=clients[p].submit, args=(0, encode_counts(counts(p, 0)))) for p in ("p1", "p2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    got = clients["p3"].fetch_aggregate(0, timeout=20)
    assert got.close_reason == "deadline" and got.missing == ("p3",) and set(got.contributors) == {"p1", "p2"}
    np.testing.assert_array_equal(decode_counts(got.payload), counts("p1", 0) + counts("p2", 0))
    slow = next(s for s in clients["p3"].status().sessions if s.session_id == "slow")
    assert [(e.round, e.missing) for e in slow.straggler_events] == [(0, ["p3"])]
    assert slow.current_round.round == 1
    _rejected(lambda: clients["p3"].submit(0, encode_counts(counts("p3", 0))), 409, "round_closed")
    assert clients["p3"].submit(1, encode_counts(counts("p3", 1))).received == ["p3"]
    for c in clients.values():
        c.close()


def test_submit_and_wait_answers_with_the_aggregate_in_one_request(server, consortium) -> None:
    """``submit_and_fetch``: the last submitter gets the aggregate at once, earlier ones when the round closes
    within their wait (one request per party per round), a short wait gets the receipt instead."""
    from fedtopic.network.client import AggregateResult
    from fedtopic.network.schemas import UpdateReceipt

    clients = {p: AggregatorClient(server.url, consortium.keys[p], "one-request") for p in PIDS}
    clients["p1"].open_session(PIDS, combiner="none", meta={"shape": list(SHAPE)})
    want = sum(counts(p, 0) for p in PIDS)
    # round 0: p1 waits on the line while p2 and p3 submit; p3 completes the round
    got: dict[str, object] = {}
    waiter = threading.Thread(target=lambda: got.update(p1=clients["p1"].submit_and_fetch(
        0, encode_counts(counts("p1", 0)), 20.0)))
    waiter.start()
    short = clients["p2"].submit_and_fetch(0, encode_counts(counts("p2", 0)), 0.05)  # p3 is not in yet
    assert isinstance(short, UpdateReceipt) and not short.round_closed
    last = clients["p3"].submit_and_fetch(0, encode_counts(counts("p3", 0)), 20.0)
    waiter.join(timeout=30)
    for result in (got["p1"], last):
        assert isinstance(result, AggregateResult) and result.contributors == tuple(PIDS)
        np.testing.assert_array_equal(decode_counts(result.payload), want)
    assert clients["p2"].fetch_aggregate(0, timeout=5).payload == last.payload
    # the same update resent after a lost answer is idempotent: the receipt, then the aggregate as usual
    again = clients["p3"].submit_and_fetch(0, encode_counts(counts("p3", 0)), 5.0)
    assert isinstance(again, UpdateReceipt) and again.round_closed
    _rejected(lambda: clients["p3"].submit_and_fetch(0, encode_counts(counts("p1", 0)), 5.0), 409, "duplicate_update")
    for c in clients.values():
        c.close()


def test_kill_9_mid_round_loses_no_accepted_update(consortium, tmp_path) -> None:
    data = tmp_path / "data"
    proc = AggregatorProcess(consortium.config, data, tmp_path / "server.log")
    try:
        clients = {p: AggregatorClient(proc.url, consortium.keys[p], "crash", patience=60, backoff=0.2) for p in PIDS}
        clients["p1"].open_session(PIDS, combiner="none", meta={"shape": list(SHAPE)})
        clients["p1"].submit(0, encode_counts(counts("p1", 0)))
        # p2 waits on the line (its update held in memory), then gets the receipt: written before it
        assert not clients["p2"].submit_and_fetch(0, encode_counts(counts("p2", 0)), 0.3).round_closed
        proc.kill9()
        proc = AggregatorProcess(consortium.config, data, tmp_path / "server.log", port=proc.port)
        assert clients["p3"].round(0).received == ["p1", "p2"]
        receipt = clients["p3"].submit(0, encode_counts(counts("p3", 0)))
        assert receipt.round_closed
        got = clients["p1"].fetch_aggregate(0, timeout=10)
        assert got.contributors == tuple(PIDS)
        np.testing.assert_array_equal(decode_counts(got.payload), sum(counts(p, 0) for p in PIDS))
        for c in clients.values():
            c.close()
    finally:
        proc.stop()


def test_kill_9_mid_round_loses_no_large_update(consortium, tmp_path) -> None:
    """Updates above the store's inline limit live in files: they survive a kill -9 after their 202 too."""
    from fedtopic.network.dense import decode_dense
    from fedtopic.network.store import INLINE_MAX

    shape = (120, 100)
    arrays = {p: np.random.default_rng(int(p[1:])).random(shape) for p in PIDS}
    assert len(encode_dense(arrays["p1"])) > INLINE_MAX
    data = tmp_path / "data"
    proc = AggregatorProcess(consortium.config, data, tmp_path / "server.log")
    try:
        clients = {p: AggregatorClient(proc.url, consortium.keys[p], "big", patience=60, backoff=0.2) for p in PIDS}
        clients["p1"].open_session(PIDS, combiner="dense-sum", meta={"shape": list(shape), "dtype": "float64"})
        for p in ("p1", "p2"):
            clients[p].submit(0, encode_dense(arrays[p]))
        proc.kill9()
        assert len(list((data / "blobs" / "big").iterdir())) == 2
        proc = AggregatorProcess(consortium.config, data, tmp_path / "server.log", port=proc.port)
        assert clients["p3"].round(0).received == ["p1", "p2"]
        assert clients["p3"].submit(0, encode_dense(arrays["p3"])).round_closed
        got = clients["p2"].fetch_aggregate(0, timeout=10)
        np.testing.assert_array_equal(decode_dense(got.payload, shape, "float64"), sum(arrays[p] for p in PIDS))
        for c in clients.values():
            c.close()
    finally:
        proc.stop()


def test_serve_refuses_a_bad_config_in_one_line(tmp_path, capsys) -> None:
    from fedtopic.cli.main import main

    bad = tmp_path / "consortium.toml"
    bad.write_text('name = "x"\n[[parties]]\nid = "p1"\naddress = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"\n'
                   'x25519_public = "' + "ab" * 32 + '"\n')
    assert main(["aggregator", "serve", "--config", str(bad), "--data", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "development account" in err and len(err.splitlines()) == 1
    assert main(["aggregator", "serve", "--config", str(tmp_path / "none.toml")]) == 2


def test_client_retries_with_backoff_then_raises_unavailable(consortium, caplog) -> None:

    from fedtopic.network.errors import AggregatorUnavailable

    dead = AggregatorClient(f"http://127.0.0.1:{free_port()}", consortium.keys["p1"], "x", patience=0.5,
                            backoff=0.01)
    with caplog.at_level("WARNING", logger="fedtopic.network.client"), pytest.raises(AggregatorUnavailable) as exc:
        dead.submit(0, b"payload")
    assert "failed for" in str(exc.value) and "ConnectError" in str(exc.value)
    assert int(str(exc.value).split("(")[1].split()[0]) > 3  # several attempts within the patience
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and warnings[0].startswith("waiting for the aggregator at")  # one line, not one per try
    dead.close()


def test_progress_is_the_callers_own_view_of_a_session(server, consortium) -> None:
    """``GET /v1/sessions/{id}/progress``: state, open round and the caller's own progress only (how a starting
    node picks its run without fetching every member of every session); 404 for no session."""
    clients = {p: AggregatorClient(server.url, consortium.keys[p], "progress") for p in PIDS}
    assert clients["p1"].progress() is None
    clients["p1"].open_session(PIDS, combiner="none", meta={"shape": list(SHAPE)})
    fresh = clients["p2"].progress()
    assert fresh is not None and fresh.state == "running" and fresh.current_round == 0
    assert fresh.you.party == "p2" and fresh.you.last_round is None and fresh.you.ended is None
    for p in PIDS[:2]:
        clients[p].submit(0, encode_counts(counts(p, 0)))
    clients["p3"].submit(0, encode_counts(counts("p3", 0)))
    clients["p1"].submit(1, encode_counts(counts("p1", 1)))
    mine, theirs = clients["p1"].progress(), clients["p3"].progress()
    assert mine is not None and theirs is not None and mine.current_round == theirs.current_round == 1
    assert (mine.you.party, mine.you.last_round, theirs.you.last_round) == ("p1", 1, 0)
    for p in PIDS:
        clients[p].finished()
    done = clients["p3"].progress()
    assert done is not None and done.state == "finished" and done.you.ended == "finished"
    for c in clients.values():
        c.close()
