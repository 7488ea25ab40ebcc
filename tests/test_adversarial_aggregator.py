"""Hostile clients against a real `fedtopic aggregator serve` process on 127.0.0.1.

Unauthenticated bodies cost nothing (peak RSS under four concurrent 200 MiB uploads), bounds follow the
session's declared shape, strict JSON, a memory budget per session, and the probes that held before (unsigned,
non-member, tampered, replayed, oversize, deep JSON, zlib bomb, path tricks) still get a 4xx.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import zlib
from pathlib import Path

import httpx
import numpy as np
import pytest

from fedtopic.consortium.init import init_consortium
from fedtopic.crypto.codec import HEADER, encode_counts
from fedtopic.crypto.keys import load_party_keys
from fedtopic.network.client import AggregatorClient
from fedtopic.network.errors import AggregatorRejected
from fedtopic.network.wire import request_headers, update_headers
from fedtopic.simulation.aggregator_proc import AggregatorProcess

pytestmark = [pytest.mark.adversarial, pytest.mark.xdist_group("adversarial-aggregator")]
MiB = 2**20



def _plain(config: Path) -> None:
    """The consortium under protection ``none``: these tests exercise the aggregator with plain sessions (a consortium
    under a stronger protection refuses them: ``weaker_than_consortium``)."""
    from fedtopic.consortium.config import load_consortium, save_consortium

    cfg = load_consortium(config)
    save_consortium(cfg.model_copy(update={"aggregator": cfg.aggregator.model_copy(update={"protection": "none"})}),
                    config)

def _kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"{field} not in /proc/{pid}/status")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    init = init_consortium(3, root / "c", seed=3)
    _plain(init.config_path)
    keys = {p: load_party_keys(k) for p, k in init.key_paths.items()}
    proc = AggregatorProcess(init.config_path, root / "data", root / "server.log")
    yield proc, keys, root
    proc.stop()


def _stream(total: int, chunk: bytes):
    sent = 0
    while sent < total:
        yield chunk
        sent += len(chunk)


def _hostile_upload(url: str, total: int, results: list, headers: dict[str, str] | None = None) -> None:
    chunk = b"[" + b"{}," * (MiB // 3)
    try:
        r = httpx.post(url, content=_stream(total, chunk), headers=headers or {}, timeout=60)
        results.append(r.status_code)
    except httpx.TransportError:  # the server answered and closed while we were still sending
        results.append("closed")


def test_unauthenticated_uploads_cost_no_memory(world):
    proc, keys, _ = world
    pid = proc.proc.pid
    before = _kib(pid, "VmRSS")
    peak_before = _kib(pid, "VmHWM")
    results: list = []
    bad_sig = {"X-Fedtopic-Party": "p1", "X-Fedtopic-Signature": "0x" + "11" * 65,
               "X-Fedtopic-Timestamp": str(int(time.time())), "X-Fedtopic-Nonce": "ab" * 16,
               "X-Fedtopic-Content-Sha256": "00" * 32}
    threads = [threading.Thread(target=_hostile_upload, args=(proc.url + "/v1/sessions", 200 * MiB, results,
                                                              None if i % 2 == 0 else bad_sig)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(results) == 4 and all(r in (401, "closed") for r in results), results
    growth = (max(_kib(pid, "VmHWM"), peak_before) - before) / 1024
    assert growth < 64, f"peak RSS grew by {growth:.0f} MiB under unauthenticated uploads"
    assert httpx.get(proc.url + "/healthz").status_code == 200


def test_a_members_oversize_json_is_refused_before_reading(world):
    proc, keys, _ = world
    body = b"[" + b"{}," * (3 * MiB)  # 9 MiB, far above a session spec's bound
    headers = request_headers(keys["p1"], "POST", "/v1/sessions", body)
    r = httpx.post(proc.url + "/v1/sessions", content=body, headers=headers, timeout=60)
    assert r.status_code == 413 and r.json()["code"] == "payload_too_large"


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"{", b"\xff\xfe", b"[1,]"])
def test_non_standard_json_numbers_are_422(world, literal):
    proc, keys, _ = world
    body = (b'{"session_id": "strict", "parties": ["p1"], "combiner": "none", "meta": {"shape": [2, 2]}, '
            b'"params": {"x": ' + literal + b"}}")
    r = httpx.post(proc.url + "/v1/sessions", content=body,
                   headers=request_headers(keys["p1"], "POST", "/v1/sessions", body) | {"Content-Type": "application/json"})
    assert r.status_code == 422 and r.json()["code"] == "invalid_json"
    with AggregatorClient(proc.url, keys["p1"], "strict") as c:
        _, code = _rejected(lambda: c.session_info())
        assert code == "unknown_session"  # nothing was stored


@pytest.mark.parametrize("levels", [65, 10_000, 100_000])
def test_deep_json_is_422_and_the_server_lives(world, levels):
    """100,000 levels in 200 KB killed the process (SIGSEGV: web3's import raises the recursion limit, and the C
    JSON parser recursed past the native stack before the depth check ran)."""
    proc, keys, _ = world
    body = b'{"session_id": "deep", "parties": ["p1"], "meta": ' + b"[" * levels + b"]" * levels + b"}"
    r = httpx.post(proc.url + "/v1/sessions", content=body,
                   headers=request_headers(keys["p1"], "POST", "/v1/sessions", body) | {"Content-Type": "application/json"})
    assert r.status_code == 422 and "nested" in r.json()["detail"]
    assert proc.proc.poll() is None and httpx.get(proc.url + "/healthz").status_code == 200


def _rejected(call) -> tuple[int, str]:
    try:
        call()
    except AggregatorRejected as exc:
        return exc.status, exc.code
    raise AssertionError("the call was not refused")


def test_a_session_over_the_memory_budget_is_refused(world):
    proc, keys, _ = world
    pid = proc.proc.pid
    before = _kib(pid, "VmRSS")
    with AggregatorClient(proc.url, keys["p1"], "huge") as c:
        status, code = _rejected(lambda: c.open_session(["p1"], combiner="none", meta={"shape": [16384, 16384]}))
    assert (status, code) == (422, "session_too_large")
    assert (_kib(pid, "VmRSS") - before) / 1024 < 64


def test_an_update_is_bounded_by_its_sessions_shape(world):
    proc, keys, _ = world
    with AggregatorClient(proc.url, keys["p1"], "bounded") as c:
        c.open_session(["p1", "p2"], combiner="none", meta={"shape": [4, 3]})
        big = encode_counts(np.ones((4, 3), dtype=np.int64)) + b"\0" * (2 * MiB)
        status, code = _rejected(lambda: c.submit(0, big))
        assert (status, code) == (413, "payload_too_large")
        c.submit(0, encode_counts(np.ones((4, 3), dtype=np.int64)))  # a legitimate update still goes in


def test_a_zlib_bomb_is_refused(world):
    proc, keys, _ = world
    with AggregatorClient(proc.url, keys["p2"], "bomb") as c:
        c.open_session(["p2", "p3"], combiner="none", meta={"shape": [100, 10]})
        body = zlib.compress(b"\x01" * (50 * MiB), 9)
        payload = HEADER.pack(b"FTNK", 1, b"\0\0\0", 100, 10, 1000, len(body)) + body
        status, _ = _rejected(lambda: c.submit(0, payload))
        assert status in (413, 422)


def test_tampered_replayed_and_foreign_requests_are_4xx(world):
    proc, keys, _ = world
    for session in ("tampered", "elsewhere"):  # its own sessions: no test relies on another's
        with AggregatorClient(proc.url, keys["p1"], session) as c:
            c.open_session(["p1", "p2"], combiner="none", meta={"shape": [4, 3]})
    path = "/v1/sessions/tampered"
    headers = request_headers(keys["p1"], "GET", path)
    assert httpx.get(proc.url + path, headers=headers).status_code == 200
    replay = httpx.get(proc.url + path, headers=headers)
    assert replay.status_code == 409 and replay.json()["code"] == "replayed_request"
    outsider = request_headers(keys["p3"], "GET", path)  # a member of the consortium, not of the session
    assert httpx.get(proc.url + path, headers=outsider).status_code == 403
    payload = encode_counts(np.ones((4, 3), dtype=np.int64))
    upd = update_headers(keys["p2"], "tampered", 0, payload)
    tampered = httpx.post(proc.url + path + "/rounds/0/updates", content=payload[:-1] + b"\x07", headers=upd)
    assert tampered.status_code == 401 and tampered.json()["code"] == "bad_signature"
    moved = httpx.post(proc.url + "/v1/sessions/elsewhere/rounds/0/updates", content=payload, headers=upd)
    assert moved.status_code == 401  # signed for another session
    for bad_path in ("/v1/sessions/..%2F..%2Fetc", "/v1/sessions/a%00b", "/v1/sessions/" + "x" * 300):
        h = request_headers(keys["p1"], "GET", bad_path)
        assert 400 <= httpx.get(proc.url + bad_path, headers=h).status_code < 500


def test_slow_headers_do_not_block_healthz(world):
    proc, _, _ = world
    host, port = "127.0.0.1", int(proc.url.rsplit(":", 1)[1])
    slow = [socket.create_connection((host, port), timeout=5) for _ in range(20)]
    try:
        for s in slow:
            s.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\n")  # and never finish the headers
        assert httpx.get(proc.url + "/healthz", timeout=5).status_code == 200
    finally:
        for s in slow:
            s.close()


def test_server_log_has_no_traceback(world):
    _, _, root = world
    time.sleep(0.2)
    log = (root / "server.log").read_text()
    assert "Traceback" not in log, log[-3000:]
    assert os.path.getsize(root / "server.log") < 200_000


def test_replays_are_refused_across_a_restart(tmp_path):
    init = init_consortium(2, tmp_path / "c", seed=5)
    _plain(init.config_path)
    keys = {p: load_party_keys(k) for p, k in init.key_paths.items()}
    proc = AggregatorProcess(init.config_path, tmp_path / "data", tmp_path / "a.log")
    try:
        with AggregatorClient(proc.url, keys["p1"], "replay") as c:
            c.open_session(["p1", "p2"], combiner="none", meta={"shape": [2, 2]})
        get_path, vocab_path = "/v1/sessions/replay", "/v1/sessions/replay/vocabulary"
        get_headers = request_headers(keys["p1"], "GET", get_path)
        body = json.dumps({"words": ["a", "b"]}).encode()
        post_headers = request_headers(keys["p1"], "POST", vocab_path, body) | {"Content-Type": "application/json"}
        assert httpx.get(proc.url + get_path, headers=get_headers).status_code == 200
        assert httpx.post(proc.url + vocab_path, content=body, headers=post_headers).status_code == 200
        port = proc.port
        proc.stop()
        proc = AggregatorProcess(init.config_path, tmp_path / "data", tmp_path / "b.log", port=port)
        again = httpx.get(proc.url + get_path, headers=get_headers)
        assert again.status_code == 409 and again.json()["code"] == "replayed_request"
        again = httpx.post(proc.url + vocab_path, content=body, headers=post_headers)
        assert again.status_code == 409 and again.json()["code"] == "replayed_request"
    finally:
        proc.stop()


def test_a_client_that_disconnects_mid_body_costs_one_log_line(tmp_path):
    init = init_consortium(2, tmp_path / "c", seed=6)
    _plain(init.config_path)
    keys = {p: load_party_keys(k) for p, k in init.key_paths.items()}
    proc = AggregatorProcess(init.config_path, tmp_path / "data", tmp_path / "a.log")
    try:
        with AggregatorClient(proc.url, keys["p1"], "cut") as c:
            c.open_session(["p1", "p2"], combiner="none", meta={"shape": [200, 20]})
        payload = encode_counts(np.ones((200, 20), dtype=np.int64))
        headers = update_headers(keys["p1"], "cut", 0, payload)
        lines = ["POST /v1/sessions/cut/rounds/0/updates HTTP/1.1", "Host: 127.0.0.1",
                 f"Content-Length: {len(payload)}"] + [f"{k}: {v}" for k, v in headers.items()]
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", proc.port), timeout=5)
            s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + payload[: len(payload) // 2])
            s.close()
        time.sleep(1.0)
        assert httpx.get(proc.url + "/healthz").status_code == 200
    finally:
        proc.stop()
    log = (tmp_path / "a.log").read_text()
    assert "Traceback" not in log and "Exception in ASGI" not in log, log[-3000:]
    assert log.count("disconnected before sending its whole body") == 20


def test_a_body_that_trickles_in_is_dropped(tmp_path):
    init = init_consortium(2, tmp_path / "c", seed=8)
    _plain(init.config_path)
    keys = {p: load_party_keys(k) for p, k in init.key_paths.items()}
    proc = AggregatorProcess(init.config_path, tmp_path / "data", tmp_path / "a.log", extra_args=("--read-timeout", "1"))
    try:
        body = json.dumps({"session_id": "slow", "parties": ["p1", "p2"], "combiner": "none",
                           "meta": {"shape": [2, 2]}}).encode()
        headers = request_headers(keys["p1"], "POST", "/v1/sessions", body)
        head = ["POST /v1/sessions HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}",
                "Content-Type: application/json"] + [f"{k}: {v}" for k, v in headers.items()]
        s = socket.create_connection(("127.0.0.1", proc.port), timeout=10)
        s.sendall(("\r\n".join(head) + "\r\n\r\n").encode() + body[:10])  # and the rest never comes
        answer = b""
        for _ in range(100):  # the server answers, then closes: read to the end (bounded)
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
        s.close()
        assert b" 408 " in answer.split(b"\r\n")[0] and b"request_timeout" in answer
    finally:
        proc.stop()


def test_300_slowloris_connections_are_dropped_within_15_seconds(world):
    """Half send nothing, half trickle a header byte a second: the header deadline (10 s) drops them all."""
    proc, _, _ = world
    host, port = "127.0.0.1", int(proc.url.rsplit(":", 1)[1])
    conns = [socket.create_connection((host, port), timeout=5) for _ in range(300)]
    started = time.monotonic()
    for s in conns[::2]:
        s.sendall(b"GET /status HTTP/1.1\r\n")
    open_ = set(range(len(conns)))
    try:
        while open_ and time.monotonic() - started < 15.0:
            for i in list(open_):
                try:
                    if i % 2 == 0:
                        conns[i].sendall(b"X")  # one more byte of a header that never ends
                    conns[i].setblocking(False)
                    if conns[i].recv(1) == b"":
                        open_.discard(i)
                except BlockingIOError:
                    pass
                except OSError:  # reset by the server
                    open_.discard(i)
                finally:
                    conns[i].setblocking(True)
            assert httpx.get(proc.url + "/healthz", timeout=5).status_code == 200
            time.sleep(1.0)
        assert not open_, f"{len(open_)} of 300 slow connections still open after 15 s"
    finally:
        for s in conns:
            s.close()
