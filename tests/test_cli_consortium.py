"""`fedtopic consortium init` through the real CLI entry point."""

import json

from fedtopic.cli.main import main
from fedtopic.consortium.config import load_consortium
from fedtopic.crypto.keys import load_party_keys


def test_init_text_output(tmp_path, capsys):
    assert main(["consortium", "init", "--parties", "3", "--out", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    cfg = load_consortium(tmp_path / "c" / "consortium.toml")
    assert "consortium 'consortium': 3 parties" in out
    for party in cfg.parties:
        assert party.address in out and f"{party.id}.key.json" in out
    assert "A trial on one machine: every party's secret keys are in this folder" in out


def test_init_json_with_fig5_cp_file(tmp_path, capsys):
    cp = tmp_path / "cp.csv"
    cp.write_text("1,1,0,0,0\n1,1,1,0,0\n0,1,1,0,0\n0,0,0,1,1\n0,0,0,1,1\n")
    code = main(["consortium", "init", "--parties", "5", "--cp", str(cp), "--out", str(tmp_path / "c"),
                 "--name", "fig5", "--format", "json"])  # fmt: skip
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["name"] == "fig5" and doc["config"] == str(tmp_path / "c" / "consortium.toml")
    assert {p["id"]: p["reads"] for p in doc["parties"]} == {
        "p1": ["p1", "p2"], "p2": ["p1", "p2", "p3"], "p3": ["p2", "p3"], "p4": ["p4", "p5"], "p5": ["p4", "p5"],
    }  # fmt: skip
    for party in doc["parties"]:
        assert load_party_keys(party["key_file"]).address == party["address"]


def test_init_errors_are_one_line_and_exit_2(tmp_path, capsys):
    out_dir = str(tmp_path / "c")
    assert main(["consortium", "init", "--parties", "2", "--out", out_dir]) == 0
    capsys.readouterr()
    assert main(["consortium", "init", "--parties", "2", "--out", out_dir]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "refusing to overwrite" in err and "Traceback" not in err
    cp = tmp_path / "cp.csv"
    cp.write_text("1,1\n1,1\n")
    assert main(["consortium", "init", "--parties", "3", "--cp", str(cp), "--out", str(tmp_path / "d")]) == 2
    assert "the CP matrix has 2 rows but the consortium has 3 parties" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_init_usage_errors(tmp_path, capsys):
    assert main(["consortium", "init", "--parties", "0", "--out", str(tmp_path)]) == 2
    assert main(["consortium", "init", "--out", str(tmp_path)]) == 2
    assert "give --cards CARD… (each organisation's card from `consortium keygen`) or --parties N" in \
        capsys.readouterr().err
