"""Protections as a layer: a protection defined in the test suite (``plugins/offset_mask.py``) runs through
``fedtopic simulate`` with an existing algorithm and its real aggregator process, without a line of fedtopic naming
it; every layer asks the registry, never a protection's name; a plugin algorithm's run folder and headline."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _texts import theme_texts, write_jsonl

from fedtopic.cli.main import main

TESTS = Path(__file__).resolve().parent
PROTECTION = "offset-mask=plugins.offset_mask:OffsetMask"
ALGORITHM = "fedavg-vector=plugins.fedavg_vector:FedAvgVector"


@pytest.fixture()
def plugins(monkeypatch):
    monkeypatch.setenv("FEDTOPIC_PROTECTIONS", PROTECTION)
    monkeypatch.setenv("FEDTOPIC_ALGORITHMS", ALGORITHM)
    monkeypatch.setenv("PYTHONPATH", str(TESTS))  # the aggregator child imports the plugin too


def _csfed(tmp_path: Path, capsys, protection: str) -> tuple[dict, np.ndarray]:
    corpus = tmp_path / "docs.jsonl"
    if not corpus.exists():
        write_jsonl(corpus, theme_texts(90, seed=3))
    out = tmp_path / protection
    assert main(["simulate", "--algorithm", "csfed-lda", "--corpus", str(corpus), "--parties", "3", "-k", "3",
                 "--iterations", "4", "--protection", protection, "--out", str(out), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    with np.load(out / "model.npz") as npz:
        return summary, npz["phi"]


def test_a_plugin_protection_trains_csfed_exactly_as_the_protection_it_extends(tmp_path, capsys, plugins):
    plugged, phi = _csfed(tmp_path, capsys, "offset-mask")
    masked, phi_mask = _csfed(tmp_path, capsys, "mask")
    assert plugged["protection"] == "offset-mask" and masked["protection"] == "mask"
    np.testing.assert_array_equal(phi, phi_mask)  # the offset goes on every cell and comes off the sum exactly
    info = json.loads((tmp_path / "offset-mask" / "run-info.json").read_text())
    assert info["protection"] == "offset-mask" and info["privacy"] == {"dp": False, "epsilon_budget": None,
                                                                       "delta": None}


def test_the_registry_refuses_what_it_cannot_load(monkeypatch):
    from fedtopic.errors import ConfigError
    from fedtopic.protections import get_protection, protection_names

    monkeypatch.setenv("FEDTOPIC_PROTECTIONS", "mask=plugins.offset_mask:OffsetMask")
    with pytest.raises(ConfigError, match="built-in protection and cannot be replaced"):
        protection_names()
    monkeypatch.setenv("FEDTOPIC_PROTECTIONS", "odd=plugins.offset_mask:OffsetMask")
    monkeypatch.syspath_prepend(str(TESTS))
    with pytest.raises(ConfigError, match="says its name is 'offset-mask'"):
        get_protection("odd")
    monkeypatch.setenv("FEDTOPIC_PROTECTIONS", "gone=no_such_module:X")
    with pytest.raises(ConfigError, match="cannot load no_such_module:X"):
        get_protection("gone")
    with pytest.raises(ConfigError, match="unknown protection 'rot13'; known: none, paillier-iphe"):
        get_protection("rot13")


@pytest.mark.parametrize(("args", "says"), [
    (["--algorithm", "fednmf", "--protection", "offset-mask"],
     "fednmf sends dense, which protection 'offset-mask' cannot carry; it takes: none, mask"),
    (["--algorithm", "iftm-lda", "--protection", "mask"],
     "iftm-lda sends topics, which protection 'mask' cannot carry; it takes: none"),
    (["--algorithm", "csfed-lda", "--protection", "rot13"], "unknown protection 'rot13'"),
])
def test_simulate_refuses_a_protection_that_cannot_carry_the_update(tmp_path, capsys, plugins, args, says):
    assert main(["simulate", "--dataset", "synthetic", "--parties", "2", "-k", "3", "--iterations", "1",
                 "--out", str(tmp_path / "x"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "x" / "history").exists()  # refused before any party started


def test_every_protection_says_what_it_carries_and_reveals(plugins):
    from fedtopic.algorithms.registry import get_algorithm
    from fedtopic.dashboard.protection_view import what_is_seen
    from fedtopic.protections import (
        get_protection,
        protection_names,
        protections_carrying,
    )

    assert protection_names()[-1] == "offset-mask"
    assert protections_carrying("topics") == ("none",)
    assert protections_carrying("dense") == ("none", "mask")
    assert get_algorithm("csfed-lda").protections() == protection_names()  # counts: every one, the plugin's too
    assert get_algorithm("fednmf").protections() == ("none", "mask")
    assert get_protection("paillier-iphe").combiner_names() == {"paillier-iphe", "paillier-packed"}
    assert get_protection("none").combiner_names() == {"none", "dense-sum", "topic-merge"}
    assert what_is_seen("sync", "offset-mask", None) == "the aggregator sees only the sum of the updates and who " \
                                                         "dropped out"
    assert "see docs/security.md" in what_is_seen("sync", "not-here", None)


def test_the_aggregator_registers_a_plugin_protections_scheme_under_its_name(monkeypatch):
    """A plugin whose scheme is named like a built-in combiner but is another object is refused."""
    import types

    from fedtopic.crypto.protect import MASK
    from fedtopic.errors import ConfigError
    from fedtopic.network.combiners import registered_combiners
    from fedtopic.protections.mask import MaskProtection

    class Impostor(MaskProtection):
        name = "impostor"

        def schemes(self):
            return (types.SimpleNamespace(**{**{k: getattr(MASK, k) for k in ("min_contributors",)},
                                             "name": "mask"}),)

    module = types.ModuleType("impostor_plugin")
    module.IMPOSTOR = Impostor()
    monkeypatch.setitem(__import__("sys").modules, "impostor_plugin", module)
    monkeypatch.setenv("FEDTOPIC_PROTECTIONS", "impostor=impostor_plugin:IMPOSTOR")
    with pytest.raises(ConfigError, match="named 'mask', a built-in combiner"):
        registered_combiners()


def test_a_plugin_algorithm_writes_the_run_folder_contract_and_a_null_metric_headline(tmp_path, capsys, plugins):
    corpus = write_jsonl(tmp_path / "docs.jsonl", theme_texts(60, seed=1))
    out = tmp_path / "run"
    assert main(["simulate", "--algorithm", "fedavg-vector", "--corpus", str(corpus), "--parties", "2", "-k", "2",
                 "--iterations", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "perplexity n/a" in printed.out and "Traceback" not in printed.err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["perplexity"] is None and summary["npmi"] is None and summary["algorithm"] == "fedavg-vector"
    topics = json.loads((out / "topics.json").read_text())
    assert [t["topic"] for t in topics] == [0, 1] and all(len(t["words"]) == 10 for t in topics)
    assert main(["topics", str(out)]) == 0


def test_every_headline_takes_null_metrics():
    from fedtopic.algorithms.registry import algorithm_names, get_algorithm

    null = {"perplexity": None, "npmi": None, "topic_diversity": None, "we_coherence": None, "macro_f1": None,
            "accuracy": None, "tss": None, "global_topics": 2, "party_topics": [2, 2], "xi": 0.5}
    for name in algorithm_names():
        line = get_algorithm(name).headline(null)
        assert "n/a" in line, name


def test_the_protections_are_listed_with_what_they_carry(capsys, plugins):
    assert main(["algorithms", "--protections", "--format", "json"]) == 0
    listed = {d["name"]: d for d in json.loads(capsys.readouterr().out)}
    assert list(listed) == ["none", "paillier-iphe", "paillier-uphe", "paillier-packed", "mask", "offset-mask"]
    assert listed["offset-mask"]["carries"] == ["counts"] and listed["mask"]["min_contributors"] == 2
    assert main(["algorithms", "--protections", "rot13"]) == 2
    assert "unknown protection 'rot13'" in capsys.readouterr().err
