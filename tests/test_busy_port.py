"""A server command on a port another process holds (`dashboard`, `aggregator serve`) says so in one line naming
the port and exits 2, before its server starts (`cli/listen.py`); --port 0 takes a free one."""

from __future__ import annotations

import socket

import pytest
from _texts import theme_texts, write_jsonl

from fedtopic.cli.main import main


@pytest.fixture
def busy():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    yield sock.getsockname()[1]
    sock.close()


def _one_line(capsys, port: int, command: str) -> None:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err and "uvicorn" not in err.lower(), err
    assert f"{command}: cannot listen on 127.0.0.1:{port}: Address already in use" in err and "--port" in err, err


def test_the_dashboard_on_a_busy_port_is_one_line(tmp_path, capsys, busy):
    write_jsonl(tmp_path / "d.jsonl", theme_texts(40, seed=2))
    assert main(["train", "--corpus", str(tmp_path / "d.jsonl"), "-k", "2", "--iterations", "2",
                 "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert main(["dashboard", str(tmp_path / "run"), "--port", str(busy)]) == 2
    _one_line(capsys, busy, "dashboard")


def test_the_aggregator_on_a_busy_port_is_one_line(tmp_path, capsys, busy):
    assert main(["consortium", "init", "--parties", "2", "--out", str(tmp_path / "c")]) == 0
    capsys.readouterr()
    assert main(["aggregator", "serve", "--config", str(tmp_path / "c" / "consortium.toml"), "--data",
                 str(tmp_path / "agg"), "--port", str(busy)]) == 2
    _one_line(capsys, busy, "aggregator serve")
