"""A link is a plug: one written outside fedtopic, registered by ``FEDTOPIC_LINKS``, carries a whole ``simulate``
through a real aggregator process and trains the model the built-in ``http`` link trains, bit for bit; a link of
the wrong mode or without its members is one line before anything starts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from fedtopic.cli.main import main
from fedtopic.errors import ConfigError
from fedtopic.links import get_link, link_names

TESTS = Path(__file__).parent


@pytest.fixture
def plugin_links(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("FEDTOPIC_LINKS", "urllib=plugins.urllib_link:UrllibLink")


class Hollow:
    """A link that forgot ``connect``."""

    name, mode, summary = "hollow", "sync", "nothing"


def _simulate(out: Path, *extra: str) -> dict:
    args = ["simulate", "--algorithm", "csfed-lda", "--dataset", "synthetic", "--parties", "3", "-k", "4",
            "--iterations", "3", "--seed", "2", "--out", str(out), "--format", "json", *extra]
    assert main(args) == 0
    return json.loads((out / "summary.json").read_text())


def test_a_plugin_link_carries_a_simulation_and_trains_what_http_trains(tmp_path, plugin_links, capsys):
    plugin = sys.modules.get("plugins.urllib_link") or __import__("plugins.urllib_link", fromlist=["EXCHANGES"])
    before = plugin.EXCHANGES[0]
    _simulate(tmp_path / "plugin", "--link", "urllib")
    assert plugin.EXCHANGES[0] - before > 20  # every party's session requests went through the plugin's wire
    assert "reached by the urllib link" in capsys.readouterr().err
    _simulate(tmp_path / "http")
    with np.load(tmp_path / "plugin" / "model.npz") as a, np.load(tmp_path / "http" / "model.npz") as b:
        np.testing.assert_array_equal(a["phi"], b["phi"])
    info = json.loads((tmp_path / "plugin" / "run-info.json").read_text())
    assert info["link"] == "urllib"


def test_links_list_by_mode_and_the_wrong_mode_is_one_line(plugin_links, tmp_path, capsys, monkeypatch):
    assert link_names("sync") == ("http", "in-process", "urllib")
    assert link_names("async") == ("memory", "chain")
    assert main(["simulate", "--algorithm", "dafed-lda", "--link", "http", "--out", str(tmp_path / "x")]) == 2
    assert "link 'http' carries synchronous runs; this run needs one for asynchronous runs: memory, chain" in \
        capsys.readouterr().err
    monkeypatch.setenv("FEDTOPIC_LINKS", "hollow=test_links_plugin:Hollow")
    with pytest.raises(ConfigError, match="link 'hollow': .* has no connect"):
        get_link("hollow")
