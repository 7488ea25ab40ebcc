"""An index of the chain's logs by contract address, topic and block, so ``eth_getLogs`` costs what it returns.

eth-tester answers ``eth_getLogs`` by scanning every receipt of every block in
range (0.27 MB/s at 1,173 blocks, and it holds the chain's lock meanwhile). The
index is an SQLite table written as transactions are mined (from their
receipts, under the chain's lock) and read without that lock, so a long query
never starves ``eth_blockNumber``. With a data directory it lives in
``logs.sqlite3`` beside the journal and is rebuilt from the chain if it is
missing or behind (a crash between a block and its index row); without one it
is a temporary file, removed on ``close()`` (an in-memory shared-cache database
would lock readers against the writer; a WAL file lets them run side by side).

Query semantics follow the JSON-RPC spec: ``address`` one or a list (OR),
``topics`` positional, each null (any), a value, or a list (OR); ``fromBlock``
and ``toBlock`` numbers or "latest"/"earliest"/"pending"; ``blockHash`` alone.
"""

from __future__ import annotations

import sqlite3
import tempfile
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS logs (
  block INTEGER NOT NULL, log_index INTEGER NOT NULL, tx_index INTEGER NOT NULL, address TEXT NOT NULL,
  topic0 TEXT, topic1 TEXT, topic2 TEXT, topic3 TEXT, block_hash TEXT NOT NULL, tx_hash TEXT NOT NULL,
  data BLOB NOT NULL, PRIMARY KEY (block, log_index));
CREATE INDEX IF NOT EXISTS logs_address ON logs (address, block);
CREATE INDEX IF NOT EXISTS logs_topic0 ON logs (topic0, block);
CREATE TABLE IF NOT EXISTS indexed (id INTEGER PRIMARY KEY CHECK (id = 0), head INTEGER NOT NULL);
"""
MAX_RESULT_LOGS = 200_000
MAX_FILTER_VALUES = 1000  # addresses or topic values in one filter (SQLite binds at most 32,766 variables)


class LogQueryError(ValueError):
    """A malformed filter (answered as JSON-RPC -32602)."""


def _hex_int(value: Any) -> int:
    return int(value, 16) if isinstance(value, str) else int(value)


def _norm(value: str) -> str:
    return value.lower()


class LogIndex:
    """The index (see module docstring). ``fetch(method, params)`` reads the chain (receipts, blocks)."""

    def __init__(self, path: Path | None, fetch: Callable[[str, list], Any]) -> None:
        self._fetch = fetch
        self._tmp = None if path is not None else tempfile.TemporaryDirectory(prefix="fedtopic-logs-")
        self._path = path if path is not None else Path(self._tmp.name) / "logs.sqlite3"  # type: ignore[union-attr]
        self._local = threading.local()
        self._write_lock = threading.Lock()
        self._conn().executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None, timeout=30.0)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    def close(self) -> None:
        """Remove the temporary database (an index with a data directory stays for the next start)."""
        if self._tmp is not None:
            self._tmp.cleanup()

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    # writing ---------------------------------------------------------------------------------
    @property
    def head(self) -> int:
        row = self._conn().execute("SELECT head FROM indexed WHERE id = 0").fetchone()
        return -1 if row is None else int(row[0])

    def add_receipt(self, receipt: Mapping[str, Any]) -> None:
        """Index one mined transaction's logs and advance the indexed head to its block."""
        block = _hex_int(receipt["blockNumber"])
        rows = [(block, _hex_int(log["logIndex"]), _hex_int(log["transactionIndex"]), _norm(log["address"]),
                 *[_norm(t) for t in log["topics"]] + [None] * (4 - len(log["topics"])),
                 _norm(log["blockHash"]), _norm(log["transactionHash"]), bytes.fromhex(log["data"][2:]))
                for log in receipt.get("logs", [])]
        with self._write_lock:
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR REPLACE INTO logs VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
            conn.execute("INSERT INTO indexed VALUES (0, ?) ON CONFLICT(id) DO UPDATE SET head = max(head, ?)",
                         (block, block))
            conn.execute("COMMIT")

    def truncate(self, head: int) -> None:
        """Forget logs above block ``head`` (after an ``evm_revert``)."""
        with self._write_lock:
            conn = self._conn()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM logs WHERE block > ?", (head,))
            conn.execute("INSERT INTO indexed VALUES (0, ?) ON CONFLICT(id) DO UPDATE SET head = ?", (head, head))
            conn.execute("COMMIT")

    def catch_up(self, chain_head: int, progress: Callable[[int], None] | None = None) -> int:
        """Index every block the chain has beyond the indexed head (a rebuild when the index is new); returns how
        many blocks were read."""
        start = self.head + 1
        for number in range(start, chain_head + 1):
            block = self._fetch("eth_getBlockByNumber", [hex(number), False])
            for tx in block.get("transactions", []):
                receipt = self._fetch("eth_getTransactionReceipt", [tx if isinstance(tx, str) else tx["hash"]])
                if receipt is not None:
                    self.add_receipt(receipt)
            if not block.get("transactions"):
                self.add_receipt({"blockNumber": hex(number), "logs": []})
            if progress is not None and number % 100 == 0:
                progress(number)
        return max(0, chain_head + 1 - start)

    # reading ---------------------------------------------------------------------------------
    def query(self, flt: Mapping[str, Any], chain_head: int, block_of_hash: Callable[[str], int]) -> list[dict]:
        """The logs matching a JSON-RPC filter object, in (block, logIndex) order."""
        if not isinstance(flt, Mapping):
            raise LogQueryError("eth_getLogs takes one filter object")
        where, args = [], []
        if flt.get("blockHash") is not None:
            if "fromBlock" in flt or "toBlock" in flt:
                raise LogQueryError("blockHash cannot be combined with fromBlock/toBlock")
            lo = hi = block_of_hash(str(flt["blockHash"]))
        else:
            lo = self._block(flt.get("fromBlock", "latest"), chain_head)
            hi = self._block(flt.get("toBlock", "latest"), chain_head)
        where.append("block BETWEEN ? AND ?")
        args += [lo, hi]
        addresses = flt.get("address")
        if addresses is not None:
            addrs = [addresses] if isinstance(addresses, str) else addresses
            if not isinstance(addrs, list) or not all(isinstance(a, str) for a in addrs):
                raise LogQueryError("address must be a string or a list of strings")
            if len(addrs) > MAX_FILTER_VALUES:
                raise LogQueryError(f"at most {MAX_FILTER_VALUES} addresses in one filter")
            if addrs:
                where.append(f"address IN ({','.join('?' * len(addrs))})")
                args += [_norm(a) for a in addrs]
        topics = flt.get("topics") or []
        if not isinstance(topics, list) or len(topics) > 4:
            raise LogQueryError("topics must be a list of at most 4 entries")
        for i, t in enumerate(topics):
            if t is None:
                continue
            options = [t] if isinstance(t, str) else t
            if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
                raise LogQueryError(f"topics[{i}] must be a hex string, a list of them, or null")
            if len(options) > MAX_FILTER_VALUES:
                raise LogQueryError(f"at most {MAX_FILTER_VALUES} values in topics[{i}]")
            if options:
                where.append(f"topic{i} IN ({','.join('?' * len(options))})")
                args += [_norm(o) for o in options]
        sql = (f"SELECT block, log_index, tx_index, address, topic0, topic1, topic2, topic3, block_hash, tx_hash, data "
               f"FROM logs WHERE {' AND '.join(where)} ORDER BY block, log_index LIMIT {MAX_RESULT_LOGS + 1}")
        rows = self._conn().execute(sql, args).fetchall()
        if len(rows) > MAX_RESULT_LOGS:
            raise LogQueryError(f"query returns more than {MAX_RESULT_LOGS} logs; narrow the block range")
        return [{"address": r[3], "topics": [t for t in r[4:8] if t is not None], "data": "0x" + r[10].hex(),
                 "blockNumber": hex(r[0]), "transactionHash": r[9], "transactionIndex": hex(r[2]),
                 "blockHash": r[8], "logIndex": hex(r[1]), "removed": False} for r in rows]

    def stats(self, addresses: list[str], topic0: str | None = None) -> dict[str, dict[str, int]]:
        """Per address: how many logs (with event signature ``topic0``, if given) it emitted and their data bytes
        (what ``ledger status`` shows)."""
        if not isinstance(addresses, list) or not all(isinstance(a, str) for a in addresses):
            raise LogQueryError("fedtopic_logStats takes a list of addresses")
        if len(addresses) > MAX_FILTER_VALUES:
            raise LogQueryError(f"fedtopic_logStats takes at most {MAX_FILTER_VALUES} addresses")
        if topic0 is not None and not isinstance(topic0, str):
            raise LogQueryError("fedtopic_logStats: topic0 must be a hex string")
        wanted = [_norm(a) for a in addresses]
        out = {a: {"logs": 0, "data_bytes": 0, "last_block": -1} for a in wanted}
        if wanted:
            topic = "" if topic0 is None else " AND topic0 = ?"
            sql = (f"SELECT address, COUNT(*), SUM(LENGTH(data)), MAX(block) FROM logs "
                   f"WHERE address IN ({','.join('?' * len(wanted))}){topic} GROUP BY address")
            args = wanted + ([] if topic0 is None else [_norm(topic0)])
            for addr, n, size, last in self._conn().execute(sql, args).fetchall():
                out[addr] = {"logs": int(n), "data_bytes": int(size or 0), "last_block": int(last)}
        return out

    @staticmethod
    def _block(tag: Any, chain_head: int) -> int:
        if tag in ("latest", "pending", "safe", "finalized", None):
            return chain_head
        if tag == "earliest":
            return 0
        try:
            number = _hex_int(tag)
        except (TypeError, ValueError):
            raise LogQueryError(f"bad block number {str(tag)[:80]!r}") from None
        if number < 0:
            raise LogQueryError(f"bad block number {str(tag)[:80]!r}: negative")
        return min(number, chain_head)  # no block beyond the head has logs (and SQLite's integers end at 2^63)
