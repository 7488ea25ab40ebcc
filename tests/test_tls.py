"""HTTPS between nodes and the aggregator with a certificate the consortium pins (issue 28 item 11): a CSFed
consortium of node processes trains over TLS, a node that is shown another certificate refuses at once, and plain
HTTP to an address that is not loopback is refused unless --insecure."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import time
import warnings

import pytest
import urllib3
from _csfed_setup import make_consortium
from _node_procs import run_node_processes

from fedtopic.cli.main import main
from fedtopic.consortium.config import load_consortium
from fedtopic.consortium.init import key_file_path
from fedtopic.crypto.keys import load_party_keys
from fedtopic.errors import NetworkError
from fedtopic.ledger.local_nodes import REPO_ROOT, free_port
from fedtopic.network import tls
from fedtopic.network.client import AggregatorClient
from fedtopic.network.tls import client_verify, configure_trust, make_certificate
from fedtopic.simulation.aggregator_proc import AggregatorProcess

pytestmark = pytest.mark.xdist_group("agg-tls")


def test_a_consortium_trains_over_https_and_a_foreign_certificate_is_refused(tmp_path, capsys, monkeypatch):
    config, cfg = make_consortium(tmp_path / "c", protection="none", iterations=2)
    port = free_port()
    assert main(["consortium", "tls", str(config), "--host", "127.0.0.1", "--host", "localhost",
                 "--port", str(port), "--format", "json"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made["url"] == f"https://127.0.0.1:{port}" and len(made["sha256"]) == 64
    assert (config.parent / "tls" / "aggregator.key").stat().st_mode & 0o077 == 0
    assert load_consortium(config).aggregator.tls_cert == "tls/aggregator.crt"
    logs = {p: tmp_path / f"{p}.log" for p in cfg.party_ids}
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log", port=port) as agg:
        assert agg.url.startswith("https://")
        outs = run_node_processes(config, cfg.party_ids, agg.url, logs)
        assert all(json.loads(out)["rounds"] >= 2 for out in outs.values())
        # the same name, another certificate (what a machine in the middle would show): refused, not retried
        pinned = config.parent / "tls" / "aggregator.crt"
        shutil.copy(pinned, tmp_path / "real.crt")
        other, _ = make_certificate(["127.0.0.1"], tmp_path / "other")
        shutil.copy(other, pinned)
        refused = subprocess.run([sys.executable, "-m", "fedtopic.cli.main", "node", "run", "--config", str(config),
                                  "--party", "p1", "--url", agg.url, "--fresh"], capture_output=True, text=True,
                                 timeout=120, env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})
        # --insecure: any certificate, and no warning on every request
        monkeypatch.setattr(tls, "TRUST", tls.Trust())
        configure_trust(None, insecure=True)
        keys = load_party_keys(key_file_path(config.parent, "p1"))
        with warnings.catch_warnings(record=True) as seen, AggregatorClient(agg.url, keys, "x", patience=5) as c:
            assert c.status().parties == list(cfg.party_ids)
        assert not [w for w in seen if issubclass(w.category, urllib3.exceptions.InsecureRequestWarning)]
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert refused.returncode == 2 and len(errors) == 1, refused.stderr[-2000:]
    assert "certificate the consortium does not pin" in errors[0]


def test_plain_http_leaves_loopback_only_when_told(tmp_path, monkeypatch, capsys):
    from fedtopic.ledger import rpc

    monkeypatch.setattr(tls, "TRUST", tls.Trust())
    monkeypatch.setattr(rpc, "RETRY", rpc.RetryPolicy())  # `node run` below sets this process's patience
    assert client_verify("http://127.0.0.1:8000") is False  # plain HTTP: no TLS, no CA bundle loaded
    with pytest.raises(NetworkError, match="refusing plain HTTP to 192.0.2.7"):
        client_verify("http://192.0.2.7:8000")
    with pytest.raises(NetworkError, match="pins no certificate"):
        client_verify("https://192.0.2.7:8443")
    configure_trust(None, insecure=True)
    assert client_verify("http://192.0.2.7:8000") is False
    config, _ = make_consortium(tmp_path / "c", protection="none", iterations=2)
    code = main(["node", "run", "--config", str(config), "--party", "p1", "--url", "http://192.0.2.7:8000"])
    err = capsys.readouterr().err
    assert code == 2 and "refusing plain HTTP to 192.0.2.7" in err and "Traceback" not in err


def test_the_pinned_context_is_shared_until_the_certificate_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(tls, "TRUST", tls.Trust())
    cert, _ = make_certificate(["127.0.0.1"], tmp_path / "a")
    configure_trust(cert)
    first = client_verify("https://127.0.0.1:8443")
    assert isinstance(first, ssl.SSLContext) and client_verify("https://127.0.0.1:8443") is first
    der = ssl.PEM_cert_to_DER_cert(cert.read_text())
    assert [c for c in first.get_ca_certs(binary_form=True)] == [der]  # the pinned certificate and nothing else
    other, _ = make_certificate(["127.0.0.1"], tmp_path / "b")
    cert.write_bytes(other.read_bytes())  # rotated in place: the next client trusts the new one only
    os.utime(cert, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    rotated = client_verify("https://127.0.0.1:8443")
    assert rotated is not first
    assert rotated.get_ca_certs(binary_form=True) == [ssl.PEM_cert_to_DER_cert(other.read_text())]
