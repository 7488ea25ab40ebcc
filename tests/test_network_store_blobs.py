"""Large payloads in the aggregator's store live in files named by committed rows; small ones stay in SQLite."""

import os
import sqlite3

import pytest

from fedtopic.network.blobs import aggregate_blob, update_blob
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
    files = {p.name for p in (store.blobs.root / "s").iterdir()}
    assert not any(f.startswith("u") for f in files), files  # every round closed: no update file left
    kept = {aggregate_blob("s", n, sha256_hex(a)).split("/")[1] for n, a in aggregates.items() if n >= 2}
    assert files == kept
    reopened = Store(tmp_path)
    assert reopened.aggregate("s", 0).payload is None and reopened.aggregate("s", 1).payload is None  # pruned
    last = KEEP_AGGREGATES + 1
    assert reopened.aggregate("s", last).payload == aggregates[last]
    assert {p.name for p in (reopened.blobs.root / "s").iterdir()} == kept


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
