"""Incremental snapshots of the embedded chain's database, so a `chain up` restart replays only the journal's tail.

py-evm keeps the whole chain (blocks, receipts, state trie) in one key–value store, and a chain only grows: new
blocks, receipts and trie nodes are new keys, and a handful of pointers (the canonical head, ...) are
overwritten. So a snapshot **appends** what changed since the last one instead of rewriting the whole store,
whose size grows with the chain (a full rewrite every 500 transactions made the total written grow with the
square of the chain's length, and stalled every request while the lock was held).

File ``state.snapshot``: a sequence of segments; a segment is a record count followed by that many records
(key length, key, value length, value), a value length of ``DELETED`` marking a removed key. Loading applies the
segments in order. The sidecar ``state.snapshot.json`` names how many bytes of the file are **committed**, how
many journal entries they include, the head block they end at and the number of live keys.

Crash safety: an append truncates the file to the committed length, writes and fsyncs the new segment, and only
then replaces the sidecar (temporary file, fsync, rename). A crash mid-append leaves bytes past the committed
length, which loading ignores; a crash before the sidecar's rename leaves the previous snapshot in force. When
the file holds more than twice the live content (keys overwritten many times) it is rewritten whole, atomically.
A snapshot written by an earlier version (one segment, a sidecar without ``bytes``) loads as it is. No pickle:
the file holds bytes only.

Crash tests set ``FEDTOPIC_CRASH_TEST_SNAPSHOT_BYTES=N``: the process then kills itself (SIGKILL) after writing
the first N bytes of its next append, which is the state a power cut or kill -9 mid-write leaves.
"""

from __future__ import annotations

import json
import os
import signal
import struct
from pathlib import Path
from typing import Any, BinaryIO

from fedtopic.ledger.errors import LedgerError
from fedtopic.temp_names import sibling_temp

SNAPSHOT_NAME = "state.snapshot"
META_NAME = "state.snapshot.json"
DELETED = 0xFFFFFFFF
CRASH_TEST_ENV = "FEDTOPIC_CRASH_TEST_SNAPSHOT_BYTES"
_LEN = struct.Struct("<I")


class ChangeTrackingStore(dict):
    """py-evm's key–value store (``MemoryDB.kv_store``) that remembers which keys were written or deleted since
    the last snapshot, and the live size Σ len(key) + len(value) (what a compacted snapshot holds)."""

    def __init__(self, *args: Any, changed: set[bytes] | None = None) -> None:
        super().__init__(*args)
        self.changed: set[bytes] = set(self) if changed is None else changed
        self.live_bytes = sum(len(k) + len(v) for k, v in self.items())

    def __setitem__(self, key: bytes, value: bytes) -> None:
        old = self.get(key)
        self.live_bytes += len(value) - (len(old) if old is not None else -len(key))
        super().__setitem__(key, value)
        self.changed.add(key)

    def __delitem__(self, key: bytes) -> None:
        self.live_bytes -= len(key) + len(self[key])
        super().__delitem__(key)
        self.changed.add(key)

    def take_changes(self) -> list[tuple[bytes, bytes | None]]:
        """(key, value or None if deleted) for every key changed since the last call; forgets them."""
        out = [(key, self.get(key)) for key in self.changed]
        self.changed = set()
        return out


def _segment(records: list[tuple[bytes, bytes | None]]) -> bytes:
    parts = [_LEN.pack(len(records))]
    for key, value in records:
        parts.append(_LEN.pack(len(key)) + key)
        parts.append(_LEN.pack(DELETED) if value is None else _LEN.pack(len(value)) + value)
    return b"".join(parts)


def _fsync_write(fh: BinaryIO, data: bytes) -> None:
    fh.write(data)
    fh.flush()
    os.fsync(fh.fileno())


def _replace(path: Path, data: bytes) -> None:
    tmp = sibling_temp(path)
    with open(tmp, "wb") as fh:
        _fsync_write(fh, data)
    tmp.replace(path)


class SnapshotFile:
    """The snapshot of one data directory: load it, append a segment, compact."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / SNAPSHOT_NAME
        self.meta_path = data_dir / META_NAME
        self.committed = 0  # bytes of the file the sidecar vouches for

    def load(self) -> tuple[ChangeTrackingStore, dict] | None:
        """(store with nothing marked changed, sidecar) if a snapshot is there, else None; LedgerError if damaged."""
        if not self.path.exists() or not self.meta_path.exists():
            return None
        try:
            meta = json.loads(self.meta_path.read_text())
            if not isinstance(meta, dict):
                raise ValueError("its sidecar is not a JSON object")
            with open(self.path, "rb") as fh:
                blob = fh.read(int(meta["bytes"])) if "bytes" in meta else fh.read()
            store, pos = {}, 0
            while pos < len(blob):
                (count,), pos = _LEN.unpack_from(blob, pos), pos + _LEN.size
                for _ in range(count):
                    (klen,) = _LEN.unpack_from(blob, pos)
                    key = blob[pos + 4:pos + 4 + klen]
                    pos += 4 + klen
                    (vlen,) = _LEN.unpack_from(blob, pos)
                    if vlen == DELETED:
                        store.pop(key, None)
                        pos += 4
                    else:
                        store[key] = blob[pos + 4:pos + 4 + vlen]
                        pos += 4 + vlen
        except (OSError, ValueError, KeyError, TypeError, struct.error) as exc:
            raise LedgerError(f"chain snapshot in {self.path.parent} is damaged ({exc}); remove {SNAPSHOT_NAME} "
                              "to replay the whole journal") from None
        if pos != len(blob) or len(blob) != int(meta.get("bytes", len(blob))) or len(store) != meta.get("records"):
            raise LedgerError(f"chain snapshot in {self.path.parent} is truncated; remove {SNAPSHOT_NAME} to replay "
                              "the journal")
        self.committed = len(blob)
        return ChangeTrackingStore(store, changed=set()), meta

    def save(self, store: ChangeTrackingStore, *, journal_entries: int, head: int) -> None:
        """Commit what changed in ``store`` since the last save (everything, the first time), then the sidecar."""
        changes = store.take_changes()
        if self.committed == 0 or self.committed > 2 * store.live_bytes + 4096:
            body = _segment(list(store.items()))
            _replace(self.path, body)
            self.committed = len(body)
        else:
            body = _segment(changes)
            with open(self.path, "r+b") as fh:
                fh.truncate(self.committed)  # drop what a crash mid-append may have left
                fh.seek(self.committed)
                if CRASH_TEST_ENV in os.environ:
                    _fsync_write(fh, body[:int(os.environ[CRASH_TEST_ENV])])
                    os.kill(os.getpid(), signal.SIGKILL)
                _fsync_write(fh, body)
            self.committed += len(body)
        meta = {"format": 2, "bytes": self.committed, "journal_entries": journal_entries, "head": head,
                "records": len(store)}
        _replace(self.meta_path, json.dumps(meta).encode())
