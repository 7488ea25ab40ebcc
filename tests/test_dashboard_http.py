"""The dashboard's HTTP surface over real HTTP on 127.0.0.1 (uvicorn in a thread): the token gate, the assets'
whitelist and security headers, label writes, the server-sent event stream; and the CLI's refusals."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

import httpx
import pytest
import uvicorn
from _dashboard_runs import run_folder

from fedtopic.dashboard.app import create_app
from fedtopic.dashboard.board import Board
from fedtopic.dashboard.sources import RunFolder

TOKEN = "a-long-enough-dashboard-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(board: Board, token: str = TOKEN):
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(board, token=token), host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    until = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < until and thread.is_alive(), "the dashboard did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(15)


def test_the_token_gate_comes_before_every_route(tmp_path):
    run, _ = run_folder(tmp_path)
    with served(Board(RunFolder(run)), token=TOKEN) as url:
        for path in ("", "api/state", "static/dashboard.js", "api/events"):
            resp = httpx.get(url + path)
            assert resp.status_code == 401 and resp.json()["code"] == "token_required", path
        assert httpx.get(url + "api/state", headers={"Authorization": "Bearer wrong-" + TOKEN}).status_code == 401
        assert httpx.get(url + "api/state", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        with httpx.Client() as client:  # the printed URL carries the token once, then a cookie does
            first = client.get(url + f"?token={TOKEN}")
            assert first.status_code == 200 and "httponly" in first.headers["set-cookie"].lower()
            assert client.get(url + "api/state").status_code == 200
        assert httpx.put(url + "api/labels/0", json={"label": "x"}).status_code == 401
    assert not (run / "topic-labels.json").exists()


def test_assets_headers_labels_and_events(tmp_path):
    run, _ = run_folder(tmp_path)
    with served(Board(RunFolder(run))) as url, httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        page = client.get(url)
        assert page.status_code == 200 and "default-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-content-type-options"] == "nosniff"
        assert client.get(url + "static/charts.js").status_code == 200
        for bad in ("static/index.html", "static/..%2F__init__.py", "static/%2e%2e%2fapp.py"):
            assert client.get(url + bad).status_code == 404, bad
        assert client.put(url + "api/labels/2", json={"label": "x" * 81}).status_code == 422
        assert client.put(url + "api/labels/2", json={"label": "y" * 1001}).status_code == 422
        assert client.put(url + "api/labels/2", content=b"{not json").status_code == 422
        assert client.put(url + "api/labels/2", content=b'{"label": ' + b"[" * 100_000).status_code == 413
        deep = client.put(url + "api/labels/2", content=b"[" * 2000)  # within the size, far past the depth
        assert deep.status_code == 422 and "nested" in deep.json()["detail"]
        assert client.put(url + "api/labels/-1", json={"label": "neg"}).status_code == 422
        ok = client.put(url + "api/labels/2", json={"label": "economy"})
        assert ok.status_code == 200 and ok.json()["labels"] == {"2": "economy"}
        assert json.loads((run / "topic-labels.json").read_text()) == {"2": "economy"}
        with client.stream("GET", url + "api/events", params={"since": "p1:10,p2:12"}, timeout=10) as stream:
            event = None
            for line in stream.iter_lines():
                if line.startswith("data: "):
                    event = json.loads(line[6:])
                    break
        assert event is not None and event["cursors"] == {"p1": 12, "p2": 12}
        assert len(event["rows"]["p1"]) == 2 and event["rows"]["p2"] == []
        assert event["state"]["run"]["algorithm"] == "csfed-lda"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fedtopic.cli.main", "dashboard", *args], capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("args, message", [
    (["--host", "0.0.0.0"], "--token"),
    (["--host", "0.0.0.0", "--token", "short"], "at least 16"),
    (["--party", "p1"], "consortium.toml"),
])
def test_the_cli_refuses_in_one_line(tmp_path, args, message):
    run, _ = run_folder(tmp_path)
    out = _cli(str(run), "--port", "0", *args)
    assert out.returncode == 2 and message in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_consortium_view_that_cannot_work_is_one_line(tmp_path):
    from fedtopic.consortium.config import load_consortium, save_consortium
    from fedtopic.consortium.init import init_consortium, key_file_path

    init = init_consortium(3, tmp_path / "c", seed=3)
    out = _cli(str(init.config_path), "--party", "p1", "--port", "0")  # dafed-lda, never deployed
    assert out.returncode == 2 and "registry" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    out = _cli(str(init.config_path), "--party", "p9", "--port", "0")
    assert out.returncode == 2 and "not a party" in out.stderr
    cfg = load_consortium(init.config_path)
    save_consortium(cfg.model_copy(update={"algorithm": cfg.algorithm.model_copy(update={"name": "csfed-lda"})}),
                    init.config_path)
    key_file_path(init.config_path.parent, "p1").unlink()
    out = _cli(str(init.config_path), "--party", "p1", "--port", "0")
    assert out.returncode == 2 and "key" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_rebound_name_is_refused_before_the_token_or_any_route(tmp_path):
    """DNS rebinding: a page of another site whose name now points at 127.0.0.1 sends its own Host."""
    run, _ = run_folder(tmp_path)
    with served(Board(RunFolder(run))) as url:
        for host in ("evil.test", "evil.test:8600", "127.0.0.1.evil.test", "localhost.evil.test:1"):
            for method, path in (("GET", "api/state"), ("PUT", "api/labels/1"), ("GET", "")):
                resp = httpx.request(method, url + path, headers={"Host": host, "Authorization": f"Bearer {TOKEN}"},
                                     json={"label": "pwned"})
                assert resp.status_code == 421 and resp.json()["code"] == "wrong_host", (host, path)
        for host in ("127.0.0.1", "localhost:1234", "[::1]:8600"):
            assert httpx.get(url + "api/state", headers={"Host": host, "Authorization": f"Bearer {TOKEN}"}
                             ).status_code == 200, host
    assert not (run / "topic-labels.json").exists()


def test_the_report_escapes_every_angle_bracket_in_its_inline_data(tmp_path):
    from fedtopic.dashboard.report import render_report

    run, _ = run_folder(tmp_path)
    board = Board(RunFolder(run))
    board.set_label(1, "<!--<script>")
    page = render_report(board)
    data = page[page.index("window.FEDTOPIC_REPORT"):]
    data = data[: data.index("</script>")]
    assert "<" not in data and "\\u003c!--\\u003cscript\\u003e" in data
