"""A masked round never releases a sum of fewer than two updates (issue 28 item 5): a configuration that would
sum one informative update per round is refused before training, a session of one party is refused, and a
straggler deadline that leaves one update is a stop with one clear line (a real aggregator and node process)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _csfed_setup import make_consortium

from fedtopic.cli.main import main
from fedtopic.consortium.init import init_consortium
from fedtopic.crypto.keys import load_party_keys
from fedtopic.ledger.local_nodes import REPO_ROOT
from fedtopic.network.client import AggregatorClient
from fedtopic.network.errors import AggregatorRejected
from fedtopic.simulation.aggregator_proc import AggregatorProcess

pytestmark = pytest.mark.xdist_group("agg-consortium_mask_rule")


def test_fednmf_selecting_one_client_per_round_under_mask_is_refused(tmp_path, capsys):
    """3 parties and the fraction 0.2 select one client per round: its 'sum' is its update (the default C rises to
    two clients: ``test_fednmf_aggregator``)."""
    from tests._texts import theme_texts, write_jsonl

    corpus = write_jsonl(tmp_path / "docs.jsonl", theme_texts(60, seed=1))
    args = ["simulate", "--algorithm", "fednmf", "--corpus", str(corpus), "--parties", "3", "-k", "2",
            "--iterations", "2", "--protection", "mask"]
    assert main([*args, "--opt", "fraction=0.2", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err.strip()
    assert "sums 1 informative update(s) per round among 3 parties" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "a" / "summary.json").exists()
    assert main([*args, "--opt", "fraction=0.67", "--out", str(tmp_path / "b")]) == 0  # two per round: allowed


def test_a_masked_session_of_one_party_is_refused(tmp_path):
    init = init_consortium(2, tmp_path / "c", seed=4)
    with AggregatorProcess(init.config_path, tmp_path / "agg", tmp_path / "agg.log") as agg:
        with AggregatorClient(agg.url, load_party_keys(init.key_paths["p1"]), "alone") as client:
            with pytest.raises(AggregatorRejected) as err:
                client.open_session(["p1"], combiner="mask", meta={"shape": [4, 2]})
    assert err.value.code == "too_few_parties"


def test_a_deadline_that_leaves_one_masked_update_stops_the_run(tmp_path):
    config, _ = make_consortium(tmp_path / "c", protection="mask", deadline=2.0, iterations=3)
    with AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log") as agg:
        log = tmp_path / "p1.log"
        proc = subprocess.run([sys.executable, "-m", "fedtopic.cli.main", "node", "run", "--config", str(config),
                               "--party", "p1", "--url", agg.url], stdout=subprocess.PIPE, stderr=open(log, "w"),
                              text=True, timeout=240, env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})
    text = log.read_text()
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1 and "Traceback" not in text, text[-2000:]
    assert "closed with 1 update(s) (p1) while p2, p3 did not send theirs" in errors[0]
    assert "never releases a sum of fewer than 2" in errors[0]
