"""The algorithm layer: registry, typed options, modes, the pure combine rule, and the commands that reach it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fedtopic.algorithms.base import Mode, parse_opt_pairs
from fedtopic.algorithms.registry import algorithm_names, algorithms_for, get_algorithm
from fedtopic.cli.main import main
from fedtopic.errors import ConfigError


def test_registry_lists_the_four_lda_algorithms_with_their_modes():
    assert set(algorithm_names()) >= {"centralized-lda", "local-lda", "csfed-lda", "dafed-lda"}
    assert set(algorithms_for(Mode.centralised)) >= {"centralized-lda", "local-lda"}
    assert "csfed-lda" in algorithms_for(Mode.sync) and "dafed-lda" in algorithms_for(Mode.async_)
    with pytest.raises(ConfigError, match="unknown algorithm 'lda9'; known: centralized-lda"):
        get_algorithm("lda9")


def test_options_are_typed_validated_and_unknown_keys_list_the_known_ones():
    dafed = get_algorithm("dafed-lda")
    opts = dafed.parse_options({"steps": "3", "alpha": "0.5", "converge_tol": "none", "sampler": "dense"})
    assert opts["steps"] == 3 and opts["alpha"] == 0.5 and opts["converge_tol"] is None and opts["sampler"] == "dense"
    assert dafed.parse_options({"steps": 2})["steps"] == 2  # TOML values are typed already
    for raw, message in [({"steps": "0"}, "steps must be ≥ 1"), ({"steps": "two"}, "steps takes a int"),
                         ({"beta": "-1"}, "beta must be > 0"), ({"beta": "nan"}, "finite"),
                         ({"sampler": "fast"}, "sampler must be one of auto, dense, sparse"),
                         ({"steps": True}, "steps takes a int"),
                         ({"bogus": "1"}, "dafed-lda has no option 'bogus'; its options are: alpha, beta")]:
        with pytest.raises(ConfigError, match=message):
            dafed.parse_options(raw)
    with pytest.raises(ConfigError, match="--opt takes key=value"):
        parse_opt_pairs(["steps"])
    with pytest.raises(ConfigError, match="--opt steps is given twice"):
        parse_opt_pairs(["steps=1", "steps=2"])


def test_a_command_refuses_an_algorithm_without_its_mode(tmp_path, capsys):
    assert main(["train", "--algorithm", "dafed-lda", "--out", str(tmp_path / "x")]) == 2
    assert "needs an algorithm that runs centralised; dafed-lda runs: asynchronous (chain)" in capsys.readouterr().err
    assert main(["simulate", "--algorithm", "centralized-lda", "--out", str(tmp_path / "y")]) == 2
    assert "centralized-lda is not federated" in capsys.readouterr().err
    assert main(["simulate", "--opt", "stepz=2", "--out", str(tmp_path / "z")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dafed-lda has no option 'stepz'" in err


def test_fedtopic_algorithms_lists_options_and_modes(capsys):
    assert main(["algorithms", "--format", "json"]) == 0
    listed = {a["name"]: a for a in json.loads(capsys.readouterr().out)}
    assert listed["dafed-lda"]["modes"] == ["async"] and listed["csfed-lda"]["modes"] == ["sync"]
    assert "mask" in listed["csfed-lda"]["update"]["protections"]
    assert [o["name"] for o in listed["csfed-lda"]["options"]][:5] == ["alpha", "beta", "sampler", "threads", "steps"]
    assert {"dp", "dp.noise_multiplier", "dp.epsilon_budget"} <= {o["name"] for o in listed["dafed-lda"]["options"]}
    assert listed["sub-lda"]["modes"] == ["centralised"]
    assert main(["algorithms"]) == 0
    assert "converge_tol" in capsys.readouterr().out


def test_the_cli_root_imports_nothing_heavy():
    code = ("import sys; from fedtopic.cli.main import main; main(['version']); main(['--help']); "
            "heavy = [m for m in ('numba', 'web3', 'fastapi', 'eth_tester', 'matplotlib', 'torch') if m in sys.modules]; "
            "print('HEAVY', heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert "HEAVY []" in out


@pytest.mark.parametrize("args, message", [
    (["train", "--topics", "0"], "error: Invalid value for '--topics'"),
    (["train", "--iterations", "abc"], "error: Invalid value for '--iterations'"),
    (["simulate", "--no-such-flag"], "error: No such option: --no-such-flag"),
    (["no-such-command"], "error: No such command 'no-such-command'"),
])
def test_usage_errors_are_one_line(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_truncated_and_empty_model_files_are_one_line(tmp_path, capsys):
    import fedtopic

    texts = ["apple banana cherry apple", "banana cherry date", "cherry date apple", "date apple banana"] * 5
    model = fedtopic.train(texts, topics=2, iterations=5, min_df=1, max_df=1.0)
    run = tmp_path / "run"
    model.save(run)
    data = (run / "model.npz").read_bytes()
    for broken in (data[: len(data) // 2], b""):
        (run / "model.npz").write_bytes(broken)
        assert main(["infer", str(run), "--text", "apple"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error:") and "corrupt or truncated" in err and err.count("\n") == 1


def test_demo_refuses_to_overwrite_without_the_flag(tmp_path, capsys):
    (tmp_path / "summary.json").write_text("{}")
    assert main(["demo", "--out", str(tmp_path)]) == 2
    assert "pass --overwrite" in capsys.readouterr().err


def test_an_update_spec_in_the_earlier_form_still_names_protections():
    """``UpdateSpec(kind, protections, description)`` with combiner names, as docs/algorithms.md had it: a plugin
    written to it gets the protections those combiners meant."""
    from fedtopic.algorithms.base import UpdateSpec

    old = UpdateSpec("dense", ("dense-sum", "mask"), "float64 vectors")
    assert old == UpdateSpec("dense", "float64 vectors", ("none", "mask"))
    assert UpdateSpec("topics", ("topic-merge",), "topic sets").protections == ("none",)


def test_a_plugin_that_lacks_a_member_of_its_modes_protocol_is_refused_at_registration(tmp_path, capsys,
                                                                                      monkeypatch):
    """``algorithms.capabilities``: a synchronous plugin without ``write_party`` is refused when it is loaded, in one
    line naming what it lacks, before any training (not a missing attribute at the end of a run)."""
    (tmp_path / "half_plugin.py").write_text(
        "from fedtopic.algorithms.base import Algorithm, Mode, UpdateSpec\n"
        "class Half(Algorithm):\n"
        "    name, summary, paper, options = 'half', 'a plugin without write_party', '-', ()\n"
        "    modes = frozenset({Mode.sync})\n"
        "    update = UpdateSpec('dense', 'a vector')\n"
        "    def party(self, party_id, index, corpus, spec, *, secret=None): ...\n"
        "    def write_simulation(self, out, run): ...\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("FEDTOPIC_ALGORITHMS", "half=half_plugin:Half")
    assert main(["simulate", "--algorithm", "half", "--dataset", "synthetic", "--parties", "2", "-k", "3",
                 "--iterations", "1", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "algorithm 'half' runs synchronous (aggregator) but has no write_party" in err, err
    assert not (tmp_path / "x").exists()
