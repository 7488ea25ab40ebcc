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
def served(board: Board, token: str | None = None):
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
    with served(Board(RunFolder(run))) as url:
        page = httpx.get(url)
        assert page.status_code == 200 and "default-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-content-type-options"] == "nosniff"
        assert httpx.get(url + "static/charts.js").status_code == 200
        for bad in ("static/index.html", "static/..%2F__init__.py", "static/%2e%2e%2fapp.py"):
            assert httpx.get(url + bad).status_code == 404, bad
        assert httpx.put(url + "api/labels/2", json={"label": "x" * 81}).status_code == 422
        assert httpx.put(url + "api/labels/2", json={"label": "y" * 1001}).status_code == 422
        assert httpx.put(url + "api/labels/2", content=b"{not json").status_code == 422
        assert httpx.put(url + "api/labels/-1", json={"label": "neg"}).status_code == 422
        ok = httpx.put(url + "api/labels/2", json={"label": "economy"})
        assert ok.status_code == 200 and ok.json()["labels"] == {"2": "economy"}
        assert json.loads((run / "topic-labels.json").read_text()) == {"2": "economy"}
        with httpx.stream("GET", url + "api/events", params={"since": "p1:10,p2:12"}, timeout=10) as stream:
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
