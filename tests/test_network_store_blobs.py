"""Large payloads in the aggregator's store live in files named by committed rows; small ones stay in SQLite."""

import os
import sqlite3

import pytest

from fedtopic.network.blobs import (
    SPARE_PREFIX,
    SPARES,
    BlobDir,
    aggregate_blob,
    update_blob,
)
from fedtopic.network.errors import NetworkError
from fedtopic.network.store import INLINE_MAX, KEEP_AGGREGATES, Store
from fedtopic.network.wire import sha256_hex

SPEC = {"parties": ["p1", "p2"], "combiner": "mask", "meta": {}, "params": {}, "straggler_deadline_seconds": 30.0}
BIG = INLINE_MAX + 1


def _payload(party: str, number: int, size: int = BIG) -> bytes:
    return (f"{party}/{number}/".encode() * (size // 4 + 1))[:size]


def _row_payloads(path) -> list[tuple[str, int, bytes | None]]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT party, number, payload FROM updates ORDER BY rowid").fetchall()


def _submit(store: Store, number: int, sizes: dict[str, int]) -> dict[str, bytes]:
    sent = {p: _payload(p, number, n) for p, n in sizes.items()}
    for p, data in sent.items():
        store.add_update("s", number, p, sha256_hex(data), data, now=1.0 + number)
    return sent


def _close(store: Store, number: int, aggregate: bytes) -> None:
    store.close_round("s", number, 2.0 + number, "complete", aggregate, sha256_hex(aggregate), ("p1", "p2"), ())


def test_large_updates_go_to_files_small_ones_stay_inline_and_both_survive_a_restart(tmp_path):
    store = Store(tmp_path)
    store.create_session("s", SPEC, "p1", 0.0)
    sent = _submit(store, 0, {"p1": BIG, "p2": INLINE_MAX})
    rows = _row_payloads(store.path)
    assert rows == [("p1", 0, None), ("p2", 0, sent["p2"])]
    name = update_blob("s", 0, "p1", sha256_hex(sent["p1"]))
    assert (store.blobs.root / name).read_bytes() == sent["p1"]
    assert dict(store.payloads("s", 0)) == sent  # from memory
    restarted = Store(tmp_path)  # no close: as after a kill -9
    assert dict(restarted.payloads("s", 0)) == sent  # from the file
    assert (restarted.blobs.root / name).exists()  # still needed: not swept


def test_closing_drops_update_files_and_keeps_the_large_aggregate_until_pruned(tmp_path):
    store = Store(tmp_path)
    store.create_session("s", SPEC, "p1", 0.0)
    aggregates = {}
    for number in range(KEEP_AGGREGATES + 2):
        _submit(store, number, {"p1": BIG, "p2": BIG})
        aggregates[number] = _payload("agg", number, 2 * BIG)
        _close(store, number, aggregates[number])
        assert store.aggregate("s", number).payload == aggregates[number]
    store.close()  # waits for the background deletions
    files = {p.name for p in (store.blobs.root / "s").iterdir() if not p.name.startswith(SPARE_PREFIX)}
    assert not any(f.startswith("u") for f in files), files  # every round closed: no update file left
    kept = {aggregate_blob("s", n, sha256_hex(a)).split("/")[1] for n, a in aggregates.items() if n >= 2}
    assert files == kept
    assert len(list((store.blobs.root / "s").glob(f"{SPARE_PREFIX}*"))) <= SPARES
    reopened = Store(tmp_path)
    assert reopened.aggregate("s", 0).payload is None and reopened.aggregate("s", 1).payload is None  # pruned
    last = KEEP_AGGREGATES + 1
    assert reopened.aggregate("s", last).payload == aggregates[last]
    assert {p.name for p in (reopened.blobs.root / "s").iterdir()} == kept


def test_closing_a_round_changes_as_many_rows_after_many_rounds_as_after_few(tmp_path):
    """Pruning drops the one aggregate leaving the window; rewriting every older row made a close O(rounds)."""
    store = Store(tmp_path)
    store.create_session("s", SPEC, "p1", 0.0)
    changed = []
    for number in range(4 * KEEP_AGGREGATES):
        _submit(store, number, {"p1": 8, "p2": 8})
        before = store._conn.total_changes
        _close(store, number, _payload("agg", number, 16))
        changed.append(store._conn.total_changes - before)
    assert len(set(changed[KEEP_AGGREGATES:])) == 1, changed  # the same count at round 16 as at round 63
    assert [store.aggregate("s", n).payload is None for n in range(4 * KEEP_AGGREGATES)] == \
        [n < 3 * KEEP_AGGREGATES for n in range(4 * KEEP_AGGREGATES)]


def _vm_steps(store: Store, call) -> int:
    """How many thousand SQLite virtual-machine instructions ``call`` runs (its work, whatever the machine)."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    store._conn.set_progress_handler(count, 1000)
    try:
        call()
    finally:
        store._conn.set_progress_handler(None, 0)
    return steps[0]


def test_a_request_nonce_costs_the_same_with_many_kept(tmp_path):
    """Forgetting expired nonces must not scan the ones kept (every signed request but an update records one:
    a thousand parties' heartbeats keep ~10⁶ in a 300 s window)."""
    store = Store(tmp_path)
    costs = []
    for kept in (100, 10_000):
        for i in range(kept):
            store.record_nonce(f"{kept}-{i}", 1_000.0 + i * 1e-3, 300.0)
        costs.append(_vm_steps(store, lambda: store.record_nonce(f"new-{kept}", 1_000.0 + kept * 1e-3, 300.0)))
    assert costs[1] <= costs[0] + 2, costs
    assert store.record_nonce("new-100", 1_000.0, 300.0) is False  # and it is still a replay guard


def test_a_partys_latest_update_is_found_without_reading_the_session(tmp_path):
    """``/status`` and ``progress`` ask for it; a scan of every update row grew with the rounds run."""
    store = Store(tmp_path)
    store.create_session("s", SPEC, "p1", 0.0)
    costs = []
    for number in range(400):
        _submit(store, number, {"p1": 8, "p2": 8} if number < 399 else {"p2": 8})
        if number in (9, 399):
            costs.append(_vm_steps(store, lambda: store.last_updates("s", ["p1", "p2", "p3"])))
        if number < 399:
            _close(store, number, b"sum")
    assert costs[1] <= costs[0] + 1, costs
    assert store.last_updates("s", ["p1", "p2", "p3"]) == {"p1": (398, 399.0), "p2": (399, 400.0)}
    assert store.last_update("s", "p3") is None


def test_a_deleted_file_is_written_over_whole_and_at_most_spares_are_kept(tmp_path):
    blobs = BlobDir(tmp_path)
    blobs.put("s/a", b"x" * 5000)
    inode = os.stat(tmp_path / "s" / "a").st_ino
    blobs.drop(["s/a"])
    assert blobs.get("s/a") is None and len(list((tmp_path / "s").glob(f"{SPARE_PREFIX}*"))) == 1
    blobs.put("s/b", b"short")  # over the spare: its old tail must not survive
    assert os.stat(tmp_path / "s" / "b").st_ino == inode and blobs.get("s/b") == b"short"
    assert not list((tmp_path / "s").glob(f"{SPARE_PREFIX}*"))
    names = [f"s/n{i}" for i in range(SPARES + 3)]
    for name in names:
        blobs.put(name, name.encode())
    blobs.drop(names)
    assert len(list((tmp_path / "s").glob(f"{SPARE_PREFIX}*"))) == SPARES
    assert {p.name for p in (tmp_path / "s").iterdir() if not p.name.startswith(SPARE_PREFIX)} == {"b"}
    assert BlobDir(tmp_path).sweep({"s/b"}) == SPARES  # a restart forgets them


def test_start_sweeps_orphans_and_refuses_a_damaged_file(tmp_path):
    store = Store(tmp_path)
    store.create_session("s", SPEC, "p1", 0.0)
    sent = _submit(store, 0, {"p1": BIG})
    folder = store.blobs.root / "s"
    (folder / ".u0-p2-0000.bin.abc.tmp").write_bytes(b"half a payload")  # crash before the row committed
    (folder / "u0-p2-0000000000000000.bin").write_bytes(b"x")  # renamed, but the row never committed
    Store(tmp_path)
    assert [p.name for p in folder.iterdir()] == [update_blob("s", 0, "p1", sha256_hex(sent["p1"])).split("/")[1]]
    path = next(folder.iterdir())
    os.truncate(path, BIG - 1)
    with pytest.raises(NetworkError, match="missing or damaged"):
        Store(tmp_path).payloads("s", 0)
    assert store.payloads("s", 0)[0][1] == sent["p1"]  # the process that accepted it still holds it in memory


def test_payload_file_names_need_valid_ids():
    with pytest.raises(NetworkError, match="session id"):
        update_blob("../etc", 0, "p1", "ab" * 32)
    with pytest.raises(NetworkError, match="party id"):
        update_blob("s", 0, "p1/../x", "ab" * 32)
