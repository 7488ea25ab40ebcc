"""Snapshots of the embedded chain's database, so a `chain up` restart replays only the journal's tail.

py-evm keeps the whole chain (blocks, receipts, state trie) in one key–value store. A snapshot is that store
written as length-prefixed (key, value) records, plus a JSON sidecar naming how many journal entries it
includes and the head it ends at. It is written atomically (temporary file, fsync, rename, then the sidecar
the same way), so a crash mid-write leaves the previous snapshot in force. Loading puts the records into a fresh
chain's store and rebuilds the chain object from it; the caller then replays the journal entries after
``journal_entries`` and checks the head. No pickle: the file holds bytes only.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

from fedtopic.ledger.errors import LedgerError

SNAPSHOT_NAME = "state.snapshot"
META_NAME = "state.snapshot.json"
_LEN = struct.Struct("<I")


def _atomic_write(path: Path, write: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        write(fh)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)


def save_snapshot(data_dir: Path, store: dict[bytes, bytes], *, journal_entries: int, head: int) -> None:
    """Write ``store`` and its sidecar (journal entries included, head block number)."""
    def records(fh: Any) -> None:
        fh.write(_LEN.pack(len(store)))
        for key, value in store.items():
            fh.write(_LEN.pack(len(key)) + key + _LEN.pack(len(value)) + value)

    _atomic_write(data_dir / SNAPSHOT_NAME, records)
    meta = json.dumps({"journal_entries": journal_entries, "head": head, "records": len(store)}).encode()
    _atomic_write(data_dir / META_NAME, lambda fh: fh.write(meta))


def load_snapshot(data_dir: Path) -> tuple[dict[bytes, bytes], dict] | None:
    """(store, sidecar) if a complete snapshot is there, else None; LedgerError if it is damaged."""
    path, meta_path = data_dir / SNAPSHOT_NAME, data_dir / META_NAME
    if not path.exists() or not meta_path.exists():
        return None
    try:
        meta = json.loads(meta_path.read_text())
        blob = path.read_bytes()
        (count,), pos, store = _LEN.unpack_from(blob, 0), _LEN.size, {}
        for _ in range(count):
            (klen,) = _LEN.unpack_from(blob, pos)
            key = blob[pos + 4:pos + 4 + klen]
            pos += 4 + klen
            (vlen,) = _LEN.unpack_from(blob, pos)
            store[key] = blob[pos + 4:pos + 4 + vlen]
            pos += 4 + vlen
    except (OSError, ValueError, struct.error) as exc:
        raise LedgerError(f"chain snapshot in {data_dir} is damaged ({exc}); remove {SNAPSHOT_NAME} to replay the "
                          "whole journal") from None
    if pos != len(blob) or len(store) != meta.get("records"):
        raise LedgerError(f"chain snapshot in {data_dir} is truncated; remove {SNAPSHOT_NAME} to replay the journal")
    return store, meta
