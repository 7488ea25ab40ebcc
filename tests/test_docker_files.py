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
