"""The docker/ files cannot run here (no Docker engine), so check what can be checked: every command they run exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedtopic.cli.main import main

yaml = pytest.importorskip("yaml")
DOCKER = Path(__file__).resolve().parents[1] / "docker"


def _services() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())["services"]


def test_compose_services_run_real_fedtopic_commands(capsys):
    services = _services()
    assert {"chain", "aggregator", "deploy", "p1", "p2", "p3"} <= set(services)
    for name, svc in services.items():
        cmd = svc["command"]
        # the longest prefix of the command that names a (sub)command must accept --help
        words = [w for w in cmd if not w.startswith("-")][:2]
        assert main([*words, "--help"]) == 0, f"service {name}: `fedtopic {' '.join(words)}` is not a command"
        options = [w for w in cmd if w.startswith("--")]
        helptext = capsys.readouterr().out
        for opt in options:
            assert opt in helptext, f"service {name}: {opt} is not an option of `fedtopic {' '.join(words)}`"


def test_each_party_container_sees_only_its_own_key():
    for name, svc in _services().items():
        keys = [v for v in svc.get("volumes", []) if "keys/" in v]
        if name.startswith("p"):
            assert keys == [f"./consortium/keys/{name}.key.json:/run/secrets/party_key:ro"]


def test_dockerfile_installs_the_package_and_runs_fedtopic():
    text = (DOCKER / "Dockerfile").read_text()
    assert "pip install ." in text and 'ENTRYPOINT ["fedtopic"]' in text


def test_besu_qbft_network_is_four_validators_around_one_bootnode():
    import json

    folder = DOCKER / "besu-qbft"
    services = yaml.safe_load((folder / "compose.yaml").read_text())["services"]
    validators = {n: s for n, s in services.items() if n.startswith("validator")}
    assert len(validators) == 4  # QBFT tolerates one faulty validator out of four
    addresses = [s["networks"]["besu"]["ipv4_address"] for s in validators.values()]
    assert len(set(addresses)) == 4 and all(a.startswith("172.30.0.1") for a in addresses)
    script = (folder / "start-validator.sh").read_text()
    assert "172.30.0.11:30303" in script and services["validator1"]["networks"]["besu"]["ipv4_address"] == "172.30.0.11"
    assert 'ip="172.30.0.1${index}"' in script  # each validator announces the address compose gives it
    for name, svc in validators.items():
        assert svc["command"] == [name.removeprefix("validator")]
        assert all(p.startswith("127.0.0.1:") for p in svc.get("ports", []))  # JSON-RPC on loopback only
    config = json.loads((folder / "qbftConfigFile.json").read_text())
    assert "qbft" in config["genesis"]["config"] and config["blockchain"]["nodes"]["count"] == 4
    assert config["genesis"]["config"]["zeroBaseFee"] is True
    assert "generate-blockchain-config" in " ".join(services["generate"]["command"])
