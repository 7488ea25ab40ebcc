"""Files a process reads at start, damaged as a crash or a disk leaves them (hypothesis): the chain's journal (a
write-ahead log: its torn last entry is dropped with a warning, a damaged earlier one is one line), a node's
history (a log: damaged lines are skipped, never a UnicodeDecodeError), key files, cards and consortium.toml (one
line each). A `chain up` on a torn journal starts and serves the chain as of its last whole entry; on a damaged
middle entry it exits 2 in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from _aggregator_proc import child_env
from eth_account import Account
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedtopic.consortium.config import load_consortium
from fedtopic.consortium.init import init_consortium
from fedtopic.crypto.keys import load_party_keys
from fedtopic.errors import FedTopicError
from fedtopic.ledger.errors import LedgerError
from fedtopic.ledger.local_nodes import start_chain_up
from fedtopic.ledger.rpc import connect
from fedtopic.ledger.server import ChainService, _journal_entry, _journal_files
from fedtopic.runs.history import SCHEMA, read_history

FAUCET = bytes.fromhex("33" * 32)
DAMAGE = st.sampled_from(["cut", "garble", "zeros", "non-utf8", "junk-line", "empty-tail"])


def _journaled_chain(folder, n: int = 3) -> list[bytes]:
    """A chain data folder with ``n`` journaled transfers (no snapshot: the journal holds them all); the raw lines."""
    service = ChainService(folder, faucet_key=FAUCET, snapshot_every=10**6)
    payer = Account.from_key(FAUCET)
    for nonce in range(n):
        raw = payer.sign_transaction({"to": "0x" + "44" * 20, "value": 1 + nonce, "gas": 21_000, "nonce": nonce,
                                      "maxFeePerGas": 10**10, "maxPriorityFeePerGas": 1, "chainId": service.chain_id,
                                      "type": 2}).raw_transaction
        answer = service.handle({"jsonrpc": "2.0", "id": 1, "method": "eth_sendRawTransaction",
                                 "params": ["0x" + bytes(raw).hex()]})
        assert "result" in answer, answer
    service._journal.close()  # a crash: no closing snapshot
    service.index.close()
    return _journal_files(folder)[-1][1].read_bytes().splitlines(keepends=True)


def _damaged(line: bytes, how: str, cut: int, junk: bytes) -> bytes:
    return {"cut": line[:cut % max(1, len(line) - 1)], "garble": line[:cut % len(line)] + junk + b"\n",
            "zeros": b"\x00" * len(line), "non-utf8": b"\xff\xfe" + line, "junk-line": junk.replace(b"\n", b"") + b"\n",
            "empty-tail": b"\n\n  \n"}[how]


def _head(folder) -> int:
    service = ChainService(folder, faucet_key=FAUCET)
    try:
        return int(service._result("eth_blockNumber", []), 16)
    finally:
        service.close()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(how=DAMAGE, cut=st.integers(0, 10**4), junk=st.binary(min_size=1, max_size=40))
def test_a_torn_last_journal_entry_is_dropped_and_the_rest_replayed(tmp_path_factory, how, cut, junk):
    folder = tmp_path_factory.mktemp("chain")
    lines = _journaled_chain(folder)
    journal = _journal_files(folder)[-1][1]
    journal.write_bytes(b"".join(lines[:-1]) + _damaged(lines[-1], how, cut, junk))
    head = _head(folder)
    assert head in (len(lines) - 1, len(lines))  # the torn transfer is gone (or, whole after all, replayed)
    assert _head(folder) == head  # and the journal was cut to a clean end: a second start agrees


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(how=st.sampled_from(["garble", "zeros", "non-utf8", "junk-line"]), cut=st.integers(1, 10**4),
       junk=st.binary(min_size=1, max_size=40).filter(lambda b: b.strip(b" \t\r\n\x00")))
def test_a_damaged_entry_before_the_last_is_one_line(tmp_path_factory, how, cut, junk):
    folder = tmp_path_factory.mktemp("chain")
    lines = _journaled_chain(folder)
    damaged = _damaged(lines[0], how, cut, junk)
    if _journal_entry(damaged.strip()) is not None:
        return  # the bytes still form an entry
    _journal_files(folder)[-1][1].write_bytes(damaged + b"".join(lines[1:]))
    with pytest.raises(LedgerError) as exc:
        ChainService(folder, faucet_key=FAUCET)
    assert "\n" not in str(exc.value) and "journal" in str(exc.value)


@pytest.mark.xdist_group("node-processes")
def test_chain_up_starts_on_a_torn_journal_and_refuses_a_damaged_one_in_one_line(tmp_path):
    folder = tmp_path / "chain"
    lines = _journaled_chain(folder)
    journal = _journal_files(folder)[-1][1]
    journal.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # kill -9 mid-write
    (folder / "faucet.key").write_text(FAUCET.hex() + "\n")
    os.chmod(folder / "faucet.key", 0o600)
    chain = start_chain_up(folder)
    try:
        assert connect(chain.url).eth.block_number == len(lines) - 1
    finally:
        chain.stop()
    folder2 = tmp_path / "chain2"  # a damaged entry in front of whole ones
    lines = _journaled_chain(folder2)
    _journal_files(folder2)[-1][1].write_bytes(b"\xff\xfe{" + lines[0] + b"".join(lines[1:]))
    done = subprocess.run([sys.executable, "-m", "fedtopic.cli.main", "chain", "up", "--port", "1", "--data",
                           str(folder2)], capture_output=True, text=True, timeout=120, env=child_env())
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "damaged journal entry" in errors[0], done.stderr


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 10**4), junk=st.binary(max_size=64), how=st.sampled_from(["cut", "garble", "zeros",
                                                                                    "non-utf8", "empty"]))
def test_history_keys_and_config_damaged_are_skipped_or_one_line(tmp_path_factory, cut, junk, how):
    folder = tmp_path_factory.mktemp("state")
    init = init_consortium(2, folder / "c", seed=3)
    history = folder / "history.jsonl"
    good = b"".join(json.dumps({"schema": SCHEMA, "round": r, "party": "p1"}).encode() + b"\n" for r in range(3))

    def damage(data: bytes) -> bytes:
        at = cut % max(1, len(data))
        return {"cut": data[:at], "garble": data[:at] + junk + data[at:], "zeros": b"\x00" * len(data),
                "non-utf8": data[:at] + b"\xff\xfe\x80" + data[at:], "empty": b""}[how]

    history.write_bytes(damage(good))
    kept = read_history(history)  # a log: never an exception
    assert all(isinstance(r["round"], int) for r in kept) and len(kept) <= 3
    key_file = init.key_paths["p1"]
    key_file.write_bytes(damage(key_file.read_bytes()))
    try:
        load_party_keys(key_file)
    except FedTopicError as exc:
        assert "\n" not in str(exc)
    config = init.config_path
    config.write_bytes(damage(config.read_bytes()))
    try:
        load_consortium(config)
    except FedTopicError as exc:
        assert "\n" not in str(exc)


@pytest.fixture(scope="module")
def built_store(tmp_path_factory):
    from _texts import theme_texts, write_jsonl

    from fedtopic.cli.main import main

    root = tmp_path_factory.mktemp("store")
    docs = write_jsonl(root / "docs.jsonl", theme_texts(60, seed=2, sentence_length=6))
    assert main(["data", "build", str(docs), "--out", str(root / "docs.store"), "--min-df", "1",
                 "--max-df", "1.0"]) == 0
    return root / "docs.store"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, 50), cut=st.integers(0, 10**6), junk=st.binary(max_size=32),
       how=st.sampled_from(["cut", "garble", "zeros", "non-utf8", "empty"]))
def test_a_damaged_token_store_or_checkpoint_is_one_line(built_store, tmp_path_factory, which, cut, junk, how):
    import shutil

    import numpy as np

    from fedtopic.corpus.token_store import open_store
    from fedtopic.node.state_file import DamagedFile, read_arrays, write_arrays

    store = tmp_path_factory.mktemp("copy") / "docs.store"
    shutil.copytree(built_store, store)
    files = sorted(p for p in store.rglob("*") if p.is_file())
    target = files[which % len(files)]
    data = target.read_bytes()
    at = cut % max(1, len(data))
    target.write_bytes({"cut": data[:at], "garble": data[:at] + junk + data[at:], "zeros": b"\x00" * len(data),
                        "non-utf8": b"\xff\xfe" + data, "empty": b""}[how])
    try:
        corpus = open_store(store)
        assert corpus.n_docs >= 0
    except FedTopicError as exc:
        assert "\n" not in str(exc)
    checkpoint = store.parent / "party-checkpoint.npz"
    write_arrays(checkpoint, {"n_wk": np.arange(12).reshape(3, 4), "round": np.array(3)})
    whole = checkpoint.read_bytes()
    at = cut % len(whole)
    checkpoint.write_bytes({"cut": whole[:at], "garble": whole[:at] + junk + whole[at:], "zeros": b"\x00" * len(whole),
                            "non-utf8": b"\xff\xfe" + whole, "empty": b""}[how])
    try:
        arrays = read_arrays(checkpoint)
        assert set(arrays) <= {"n_wk", "round"}
    except DamagedFile as exc:
        assert "\n" not in str(exc)
