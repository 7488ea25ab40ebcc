"""DAFed-LDA with one OS process per party over `fedtopic chain up`; a node killed mid-training resumes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from fedtopic.cli.main import main
from fedtopic.consortium.config import load_consortium, save_consortium
from fedtopic.consortium.init import init_consortium
from fedtopic.ledger.local_nodes import ANVIL_BINARY, REPO_ROOT, start_chain_up
from fedtopic.runs.folder import load_topic_model

pytestmark = pytest.mark.xdist_group("node-processes")
ITERATIONS = 12


def _node(config: Path, party: str, log: Path, *extra: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "fedtopic.cli.main", "node", "run", "--config", str(config), "--party", party, "--format", "json",
           "--genesis-timeout", "240", *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True, env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"})


def _dafed_consortium(tmp_path: Path, *, seed: int, iterations: int):
    """Three parties of DAFed-LDA (K 5, random delays up to 50 ms) sharing the synthetic dataset."""
    init = init_consortium(3, tmp_path / "c", seed=seed)
    cfg = load_consortium(init.config_path)
    algorithm = cfg.algorithm.model_copy(update={"topics": 5, "iterations": iterations, "random_delay": (0.0, 0.05)})
    save_consortium(cfg.model_copy(update={"algorithm": algorithm, "data": cfg.data.model_copy(update={"dataset": "synthetic"})}),
                    init.config_path)
    return init


def _kill_all(procs) -> None:
    """Kill every node still running (a failed test leaves no process behind)."""
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


@pytest.mark.parametrize("engine", ["embedded", "anvil"])
def test_three_node_processes_train_and_a_killed_node_resumes(tmp_path, capsys, engine):
    if engine == "anvil" and not ANVIL_BINARY.exists():
        pytest.skip("anvil is installed by `npm install` in contracts/")
    init = _dafed_consortium(tmp_path, seed=7, iterations=ITERATIONS)
    chain = start_chain_up(engine=engine)
    procs: dict[str, subprocess.Popen] = {}
    try:
        assert main(["consortium", "deploy", str(init.config_path), "--rpc", chain.url, *chain.faucet_args]) == 0
        logs = {p: tmp_path / f"{p}.log" for p in ("p1", "p2", "p3")}
        procs = {p: _node(init.config_path, p, logs[p]) for p in logs}
        # kill p2 once it has published a few rounds, then restart it from its checkpoint
        _wait_for(lambda: "round 3 " in logs["p2"].read_text(), 240, "p2 to reach round 3")
        procs["p2"].send_signal(signal.SIGKILL)
        procs["p2"].wait(30)
        procs["p2"] = _node(init.config_path, "p2", tmp_path / "p2-restart.log")
        outs = {p: proc.communicate(timeout=300) for p, proc in procs.items()}
        for p, (out, _) in outs.items():
            assert procs[p].returncode == 0, (tmp_path / f"{p}.log").read_text()[-2000:]
        summaries = {p: json.loads(out) for p, (out, _) in outs.items()}
        assert max(s["sweeps"] for s in summaries.values()) == ITERATIONS
        assert all(s["perplexity"] > 1 for s in summaries.values())
        assert "p2: resumed from" in (tmp_path / "p2-restart.log").read_text()
        # totals survive the restart: p2's bytes cover all its rounds (genesis included), like p1's
        per_round = {p: s["bytes_sent"] / (s["rounds"] + 1) for p, s in summaries.items()}
        assert per_round["p2"] > 0.5 * per_round["p1"], per_round
        for p in summaries:
            model = tmp_path / "c" / "state" / p / "model"
            assert (model / "theta.npy").is_file() and (model / "model.npz").is_file()
            assert load_topic_model(model).algorithm == "dafed-lda"  # not "lda"
            rows = json.loads((model / "theta-rows.json").read_text())
            assert len(rows["rows"]) == np.load(model / "theta.npy").shape[0] and rows["held_out"]
            assert set(rows["rows"]).isdisjoint(rows["held_out"])
        capsys.readouterr()
        # every channel's rounds are contiguous and every payload matches its on-chain hash
        assert main(["ledger", "audit", "--config", str(init.config_path), "--format", "json"]) == 0
    finally:
        _kill_all(procs.values())
        chain.stop()


def test_dafed_nodes_wait_out_a_chain_outage_at_every_place_in_the_loop(tmp_path, capsys):
    """`chain up` killed -9 mid-run and back 6 s later on the same port from its journal: every node waits it out
    (one patience rule, `--patience`) and finishes; before, a node quit after 3 s ("5 attempts over 3.0 s")."""
    init = _dafed_consortium(tmp_path, seed=8, iterations=40)
    data = tmp_path / "chain"
    chain = start_chain_up(data)
    port = int(chain.url.rsplit(":", 1)[1])
    procs: dict[str, subprocess.Popen] = {}
    try:
        assert main(["consortium", "deploy", str(init.config_path), "--rpc", chain.url, *chain.faucet_args]) == 0
        logs = {p: tmp_path / f"{p}.log" for p in ("p1", "p2", "p3")}
        procs = {p: _node(init.config_path, p, logs[p]) for p in logs}
        _wait_for(lambda: all("round 3 " in log.read_text() for log in logs.values()), 240, "every node at round 3")
        chain.process.send_signal(signal.SIGKILL)
        chain.process.wait(30)
        time.sleep(6)
        chain = start_chain_up(data, port=port)
        outs = {p: proc.communicate(timeout=300) for p, proc in procs.items()}
        for p in procs:
            assert procs[p].returncode == 0, logs[p].read_text()[-2000:]
        assert any("chain unreachable while" in log.read_text() for log in logs.values())
        assert max(json.loads(out)["sweeps"] for out, _ in outs.values()) == 40
        capsys.readouterr()
        assert main(["ledger", "audit", "--config", str(init.config_path), "--format", "json"]) == 0
    finally:
        _kill_all(procs.values())
        chain.stop()


@pytest.mark.parametrize("mode", ["go-on", "wait"])
def test_a_dead_peer_is_reported_and_the_nodes_go_on_or_wait_as_told(tmp_path, mode):
    """p2 killed -9 at round 1: with go-on, p1 and p3 say so, record it in their history and summary, and finish;
    with --if-behind wait, they wait for it and stop with one line once their patience is spent. Before, they
    trained 80 rounds on p2's round-0 counts without a word."""
    init = _dafed_consortium(tmp_path, seed=9, iterations=30)
    chain = start_chain_up()
    procs: dict[str, subprocess.Popen] = {}
    try:
        assert main(["consortium", "deploy", str(init.config_path), "--rpc", chain.url, *chain.faucet_args]) == 0
        logs = {p: tmp_path / f"{p}.log" for p in ("p1", "p2", "p3")}
        flags = ("--behind-rounds", "3", "--behind-seconds", "600", "--if-behind", mode, "--patience", "10")
        procs = {p: _node(init.config_path, p, logs[p], *flags) for p in logs}
        _wait_for(lambda: "round 1 " in logs["p2"].read_text(), 240, "p2 to reach round 1")
        procs["p2"].send_signal(signal.SIGKILL)
        procs["p2"].wait(30)
        outs = {p: procs[p].communicate(timeout=300)[0] for p in ("p1", "p3")}
    finally:
        _kill_all(procs.values())
        chain.stop()
    for p in ("p1", "p3"):
        text = logs[p].read_text()
        if mode == "go-on":
            summary = json.loads(outs[p])
            assert procs[p].returncode == 0 and summary["if_behind"] == "go-on", text[-2000:]
            assert summary["peers_behind"]["p2"] > 3 and "going on with their last counts" in text
            rows = [json.loads(line) for line in (tmp_path / "c" / "state" / p / "history.jsonl").read_text().splitlines()]
            assert any("p2" in row["extra"].get("behind", {}) for row in rows)
        else:
            errors = [line for line in text.splitlines() if line.startswith("error:")]
            assert procs[p].returncode == 2 and len(errors) == 1, text[-2000:]
            assert "waited" in errors[0] and "p2" in errors[0] and "did not come back" in errors[0]


def test_a_second_dafed_run_on_the_same_channels_needs_only_fresh(tmp_path, capsys, monkeypatch):
    """Issue 45, item 10: after a finished run, `node run --fresh` at every party (here with iterations changed)
    starts run 2 on the same channels, no redeploy and no hand edit: its rounds are the chain's 2^32 + t, readers
    ignore run 1's rounds, and the summaries say run 2. A party whose state folder went missing is told how to go
    on before anything moves."""
    from fedtopic.ledger import raw
    from fedtopic.ledger.endpoint import chain_for, registry_of
    from fedtopic.ledger.runs import RUN_SPAN

    init = _dafed_consortium(tmp_path, seed=10, iterations=4)
    chain = start_chain_up()
    procs: dict[str, subprocess.Popen] = {}
    try:
        assert main(["consortium", "deploy", str(init.config_path), "--rpc", chain.url, *chain.faucet_args]) == 0
        parties = ("p1", "p2", "p3")
        procs = {p: _node(init.config_path, p, tmp_path / f"{p}-1.log") for p in parties}
        first = {p: json.loads(procs[p].communicate(timeout=300)[0]) for p in parties}
        assert all(procs[p].returncode == 0 for p in parties), first
        again = _node(init.config_path, "p1", tmp_path / "p1-again.log")  # a finished run says so, replays nothing
        assert json.loads(again.communicate(timeout=120)[0])["already_finished"] is True
        assert "this run finished" in (tmp_path / "p1-again.log").read_text()
        cfg = load_consortium(init.config_path)
        save_consortium(cfg.model_copy(update={"algorithm": cfg.algorithm.model_copy(update={"iterations": 6})}),
                        init.config_path)
        # p3's state folder is gone: without --fresh it is told what to do, and nothing is moved
        state = tmp_path / "c" / "state" / "p3"
        state.rename(tmp_path / "p3-state-moved")
        lost = _node(init.config_path, "p3", tmp_path / "p3-lost.log")
        lost.communicate(timeout=120)
        assert lost.returncode == 2
        assert "start run 2 with `node run --fresh`" in (tmp_path / "p3-lost.log").read_text()
        procs = {p: _node(init.config_path, p, tmp_path / f"{p}-2.log", "--fresh") for p in parties}
        second = {p: json.loads(procs[p].communicate(timeout=300)[0]) for p in parties}
        for p in parties:
            assert procs[p].returncode == 0, (tmp_path / f"{p}-2.log").read_text()[-2000:]
            assert "run 2" in (tmp_path / f"{p}-2.log").read_text()
        assert all(s["consortium_run"] == 2 for s in second.values())
        assert max(s["sweeps"] for s in second.values()) == 6 and max(s["sweeps"] for s in first.values()) == 4
        w3 = chain_for(load_consortium(init.config_path))
        heads = raw.heads_of(w3, registry_of(cfg), [cfg.party(p).address for p in parties])
        assert all(RUN_SPAN <= h.round < 2 * RUN_SPAN for h in heads)
        capsys.readouterr()
        # issue 66 item 1: people read run 2's rounds as its own, not as 2^32 + t
        assert main(["ledger", "status", "--config", str(init.config_path)]) == 0
        status = capsys.readouterr().out
        assert "(run 2)" in status and str(RUN_SPAN)[:6] not in status, status
        from fedtopic.dashboard.sources import PartyView, _ChainReader

        # issue 66 item 2: a page's first reading goes through the head, however many eth_getLogs windows that takes
        # (one window a poll left a fast consortium's chain hundreds of blocks ahead of the page)
        monkeypatch.setattr(_ChainReader, "BLOCKS_PER_READ", 5)
        head = int(w3.eth.block_number)
        view = PartyView(init.config_path, "p1", rpc=chain.url)
        try:
            view.wait_for_signs(30.0)
            for _ in range(20):  # a poll a second: one window a poll needed head / 5 polls
                signs = view.signs()
                if "read through" not in signs.note:
                    break
                time.sleep(0.25)
        finally:
            view.close()
        rounds = {p: s.round for p, s in signs.parties.items()}
        assert len(rounds) == 3 and all(r is not None and r <= 6 for r in rounds.values()), (rounds, signs.note)
        channels = [h.channel for h in heads]
        assert signs.note == f"chain at block {head}", signs.note
        assert len(signs.publications) == len(raw.fetch_logs(w3, channels, max(0, head - 1000), head)) > 5
        assert all(pub["run"] == 2 and pub["round"] <= 6 for pub in signs.publications if pub["run"] != 1)
        assert main(["ledger", "audit", "--config", str(init.config_path), "--format", "json"]) == 0
    finally:
        _kill_all(procs.values())
        chain.stop()


def test_a_party_added_after_deploy_joins_the_consortium_and_its_current_run(tmp_path, capsys):
    """Issue 45, item 10 (a new party joining): `consortium add` writes its key file and config entry, `consortium
    deploy` admits it and sets CP, and its first `node run` takes the consortium's current run by itself."""
    from fedtopic.node.async_node import choose_run

    init = _dafed_consortium(tmp_path, seed=12, iterations=4)
    assert main(["consortium", "add", str(init.config_path), "--party", "p4", "--format", "json"]) == 0
    added = json.loads(capsys.readouterr().out)
    assert added["reads"] == ["p1", "p2", "p3", "p4"] and Path(added["key_file"]).is_file()
    assert main(["consortium", "add", str(init.config_path), "--party", "p4"]) == 2  # once only
    cfg = load_consortium(init.config_path)
    assert all("p4" in cfg.cp[o] for o in cfg.party_ids)
    chain = start_chain_up()
    procs: dict[str, subprocess.Popen] = {}
    try:
        assert main(["consortium", "deploy", str(init.config_path), "--rpc", chain.url, *chain.faucet_args]) == 0
        procs = {p: _node(init.config_path, p, tmp_path / f"{p}.log") for p in cfg.party_ids}
        outs = {p: procs[p].communicate(timeout=300)[0] for p in cfg.party_ids}
        for p in cfg.party_ids:
            assert procs[p].returncode == 0, (tmp_path / f"{p}.log").read_text()[-2000:]
        assert json.loads(outs["p4"])["parties"] == 4
    finally:
        _kill_all(procs.values())
        chain.stop()
    # the run a party takes, in every case (no chain needed)
    empty = tmp_path / "nowhere"
    assert choose_run(empty, None, fresh=False, asked=None, party_id="p4", current=3) == 3  # joins run 3
    assert choose_run(empty, 5, fresh=True, asked=None, party_id="p1") == 2  # after run 1
    assert choose_run(empty, (1 << 32) + 9, fresh=True, asked=None, party_id="p1") == 3
    assert choose_run(empty, 5, fresh=False, asked=4, party_id="p1") == 4
