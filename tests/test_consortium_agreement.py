"""Parties that disagree on what their updates mean are stopped before any update is used, in one line that names
them and what differs, across real processes (issue 28 item 1). DAFed-LDA over `chain up` trained to exit 0 on
the same 24 words in another order; the synchronous algorithms through the aggregator refuse it too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fedtopic.cli.main import main
from fedtopic.consortium.config import load_consortium, save_consortium
from fedtopic.consortium.init import init_consortium
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.ledger.local_nodes import REPO_ROOT, start_chain_up
from fedtopic.simulation.aggregator_proc import AggregatorProcess
from tests._texts import THEMES, theme_texts, write_jsonl

pytestmark = pytest.mark.xdist_group("node-processes")
WORDS = sorted(w for words in THEMES.values() for w in words)


def _consortium(tmp_path: Path, algorithm: str) -> Path:
    init = init_consortium(3, tmp_path / "c", seed=11)
    cfg = load_consortium(init.config_path)
    algo = cfg.algorithm.model_copy(update={"name": algorithm, "topics": 2, "iterations": 6})
    save_consortium(cfg.model_copy(update={"algorithm": algo}), init.config_path)
    return init.config_path


def _vocab_files(tmp_path: Path) -> tuple[Path, Path]:
    merged, aligned = tmp_path / "merged.json", tmp_path / "aligned.json"
    merged.write_text(Vocabulary(WORDS).to_json())
    aligned.write_text(Vocabulary(list(reversed(WORDS))).to_json())  # the same words in another order
    return merged, aligned


def _node(config: Path, party: str, corpus: Path, vocab: Path, log: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "fedtopic.cli.main", "node", "run", "--config", str(config), "--party", party,
           "--corpus", str(corpus), "--vocab", str(vocab), "--genesis-timeout", "120", *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True,
                            env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})


def _run(config: Path, tmp_path: Path, extra: tuple[str, ...] = ()) -> dict[str, tuple[int, str]]:
    merged, aligned = _vocab_files(tmp_path)
    procs = {}
    for i, p in enumerate(("p1", "p2", "p3")):
        corpus = write_jsonl(tmp_path / f"{p}.jsonl", theme_texts(40, seed=i))
        procs[p] = _node(config, p, corpus, merged if p == "p1" else aligned, tmp_path / f"{p}.log", *extra)
    return {p: _finish(proc, tmp_path / f"{p}.log") for p, proc in procs.items()}


def _finish(proc: subprocess.Popen, log: Path) -> tuple[int, str]:
    try:
        proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    return proc.returncode, log.read_text()


def test_dafed_parties_with_reordered_vocabularies_stop_naming_each_other_and_recover_in_any_order(tmp_path):
    """Issue 45 item 11: after the stop, the parties that were right restarted first failed again at once on the
    wrong party's old card, until it had been restarted first. Now every party restarts with --fresh, in any
    order (here the wrong one last), into a new run whose readers ignore the old run's channels."""
    config = _consortium(tmp_path, "dafed-lda")
    chain = start_chain_up()
    try:
        assert main(["consortium", "deploy", str(config), "--rpc", chain.url, *chain.faucet_args]) == 0
        results = _run(config, tmp_path)
        _, aligned = _vocab_files(tmp_path)
        right = {p: _node(config, p, tmp_path / f"{p}.jsonl", aligned, tmp_path / f"{p}-again.log", "--fresh")
                 for p in ("p2", "p3")}
        late = _node(config, "p1", tmp_path / "p1.jsonl", aligned, tmp_path / "p1-again.log", "--fresh")
        again = {p: _finish(proc, tmp_path / f"{p}-again.log") for p, proc in (*right.items(), ("p1", late))}
    finally:
        chain.stop()
    for party, (code, log) in again.items():
        assert code == 0 and "disagree" not in log, log[-2000:]
        assert "run 2" in log, log[-2000:]
    for party, (code, log) in results.items():
        others = {"p1": ("p2", "p3"), "p2": ("p1",), "p3": ("p1",)}[party]
        errors = [line for line in log.splitlines() if line.startswith("error:")]
        assert code == 2 and len(errors) == 1 and "Traceback" not in log, log[-2000:]
        assert "disagree on what their updates mean" in errors[0] and "another order" in errors[0]
        assert any(f"{party} and {o}" in errors[0] for o in others), errors[0]
        assert "restart every party with `node run --fresh`, in any order" in errors[0]


def test_sync_parties_with_reordered_vocabularies_are_refused(tmp_path):
    config = _consortium(tmp_path, "csfed-lda")
    server = AggregatorProcess(config, tmp_path / "agg", tmp_path / "agg.log")
    try:
        results = _run(config, tmp_path, ("--url", server.url))
    finally:
        server.stop()
    for p, (code, log) in results.items():  # the party whose session stood waited for the others forever
        errors = [line for line in log.splitlines() if line.startswith("error:")]
        assert code == 2 and len(errors) == 1 and "Traceback" not in log, log[-1500:]
        assert "vocab_sha256" in errors[0] and ("p1" in errors[0] if p != "p1" else " and p" in errors[0]), errors
