"""A consortium on "many machines" without trusting loopback (issue 28 item 11): every process in its own Linux
network namespace with its own address, joined by veth pairs to one bridge. CSFed trains through an aggregator
that serves HTTPS with the certificate the consortium pins; DAFed over a `chain up` (without --dev) in its own
namespace; in both, one party is killed -9 mid-run and resumes. Skips, saying why, where namespaces cannot be made."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
from _csfed_setup import make_consortium
from _netns import available, machines

from fedtopic.cli.main import main
from fedtopic.consortium.config import load_consortium, save_consortium
from fedtopic.consortium.init import init_consortium
from fedtopic.ledger.local_nodes import REPO_ROOT

pytestmark = [pytest.mark.xdist_group("node-processes"),
              pytest.mark.skipif(available() is not None, reason=f"NOT RUN: {available()}")]
ENV = {"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}


def _start(net, machine: str, argv: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(net.command(machine, [sys.executable, "-m", "fedtopic.cli.main", *argv]),
                            stdout=subprocess.PIPE, stderr=open(log, "a"), text=True, env=ENV)


def _wait(predicate, timeout: float, what: str) -> None:
    until = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < until, f"timed out waiting for {what}"
        time.sleep(0.2)


def _stop(procs) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(20)


def _nodes_with_a_kill(net, config: Path, tmp: Path, after: str, extra: tuple[str, ...] = ()) -> dict[str, str]:
    """p1..p3 in their namespaces; p2 killed -9 once ``after`` is in its log, then started again; their stdout."""
    logs = {p: tmp / f"{p}.log" for p in ("p1", "p2", "p3")}
    argv = lambda p: ["node", "run", "--config", str(config), "--party", p, "--format", "json", *extra]  # noqa: E731
    procs = {p: _start(net, p, argv(p), logs[p]) for p in logs}
    try:
        _wait(lambda: after in logs["p2"].read_text(), 300, f"p2: {after!r}")
        os.kill(procs["p2"].pid, signal.SIGKILL)
        procs["p2"].wait(30)
        procs["p2"] = _start(net, "p2", argv("p2"), logs["p2"])
        outs = {p: proc.communicate(timeout=400)[0] for p, proc in procs.items()}
    finally:
        _stop(procs.values())
    for p, proc in procs.items():
        assert proc.returncode == 0, logs[p].read_text()[-2000:]
    assert "resumed" in logs["p2"].read_text()
    return outs


def test_csfed_across_namespaces_over_pinned_https_with_a_kill(tmp_path, capsys):
    with machines(["aggregator", "p1", "p2", "p3"]) as net:
        host = net.addresses["aggregator"]
        config, _ = make_consortium(tmp_path / "c", protection="mask", iterations=4)
        assert main(["consortium", "tls", str(config), "--host", host, "--port", "8443"]) == 0
        capsys.readouterr()
        server = _start(net, "aggregator", ["aggregator", "serve", "--config", str(config), "--host", host,
                                            "--port", "8443", "--data", str(tmp_path / "agg")], tmp_path / "agg.log")
        try:
            import ssl

            pinned = ssl.create_default_context(cafile=str(config.parent / "tls" / "aggregator.crt"))

            def healthy() -> bool:
                try:
                    return httpx.get(f"https://{host}:8443/healthz", verify=pinned, timeout=2).status_code == 200
                except httpx.TransportError:
                    return False

            _wait(healthy, 60, "the aggregator over HTTPS")
            with pytest.raises(httpx.TransportError):  # not a public CA's: anyone else refuses it
                httpx.get(f"https://{host}:8443/healthz", timeout=2)
            _nodes_with_a_kill(net, config, tmp_path, "p2 round 1/")
        finally:
            _stop([server])
    phis = [np.load(config.parent / "state" / p / "model" / "model.npz")["phi"] for p in ("p1", "p2", "p3")]
    assert all(np.array_equal(phis[0], phi) for phi in phis[1:])  # one global model, kill or not


def test_dafed_across_namespaces_over_chain_up_with_a_kill(tmp_path, capsys):
    with machines(["chain", "p1", "p2", "p3"]) as net:
        host = net.addresses["chain"]
        chain = _start(net, "chain", ["chain", "up", "--host", host, "--port", "8545", "--data", str(tmp_path / "chain")],
                       tmp_path / "chain.log")
        try:
            line = chain.stdout.readline()
            faucet = re.search(r"faucet key in (\S+)\)", line)
            assert faucet is not None, line + (tmp_path / "chain.log").read_text()
            init = init_consortium(3, tmp_path / "c", seed=21)
            cfg = load_consortium(init.config_path)
            save_consortium(cfg.model_copy(update={
                "algorithm": cfg.algorithm.model_copy(update={"topics": 5, "iterations": 12,
                                                              "random_delay": (0.0, 0.05)}),
                "data": cfg.data.model_copy(update={"dataset": "synthetic"})}), init.config_path)
            assert main(["consortium", "deploy", str(init.config_path), "--rpc", f"http://{host}:8545",
                         "--faucet-key", faucet.group(1)]) == 0
            outs = _nodes_with_a_kill(net, init.config_path, tmp_path, "round 3 ", ("--genesis-timeout", "240"))
            assert max(json.loads(out)["sweeps"] for out in outs.values()) == 12
            capsys.readouterr()
            assert main(["ledger", "audit", "--config", str(init.config_path), "--format", "json"]) == 0
        finally:
            _stop([chain])
