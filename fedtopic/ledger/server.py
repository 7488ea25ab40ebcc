"""Serve the embedded chain over HTTP JSON-RPC so separate processes share one chain (``fedtopic chain up``).

Requests go through web3's EthereumTesterProvider request handling (its middleware converts between
standard JSON-RPC and eth-tester's formats); results are re-encoded as standard JSON-RPC (integers as
hex quantities). One lock serialises all calls into py-evm, waiting writes before waiting reads, and a simulated
call (``eth_call``, ``eth_estimateGas``) runs under a gas cap and a time cap (``ledger/call_guard.py``); Nagle is disabled on every connection
(with it, small keep-alive responses stall ~40 ms on delayed ACKs).

Exposure: by default only the standard ``eth_*``, ``net_*`` and ``web3_*`` methods (``eth_getLogs`` from the
log index, ``ledger/log_index.py``) and the read-only ``fedtopic_logStats`` are served; the
test controls (``evm_snapshot``, ``evm_revert``, ``evm_mine``, ...) answer "method not found" unless
the server runs with ``dev=True`` (``chain up --dev``: a throwaway chain), and so do the methods that sign with
a key the node holds (``eth_sendTransaction``, ``eth_sign``...; ``eth_accounts`` is empty): parties send only
raw transactions they signed, for this chain's id (``ledger/replay_guard.py``; unprotected ones only with
``dev``). Bodies are parsed by ``safe_json`` (nesting counted before parsing, no NaN). Error
codes are JSON integers, as the JSON-RPC spec says. A connection that stalls for ``READ_TIMEOUT_S`` is dropped.

Persistence: with a data directory, every state-changing call that succeeded (raw transactions,
mining, and with ``dev`` snapshots and reverts) is appended to the journal before it is answered; every
``snapshot_every`` entries and at a clean stop what changed in the chain's database since the last snapshot
is appended to the snapshot (``ledger/snapshot.py``), and the journal starts a new file. Journal files are
``journal-<first entry>.jsonl`` (``journal.jsonl``, from earlier versions, starts at 0); the ones a snapshot
covers are deleted. At start the snapshot is loaded and only the journal entries after it are replayed;
since each transaction is mined in its own block the replayed chain has the same contracts, storage, logs
and block numbers, a revert included. A journal line cut short by a crash was never answered, so it is
dropped. Restart time is the snapshot's load plus at most ``snapshot_every`` replayed entries, whatever the
chain's length.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from eth_account import Account
from eth_tester.exceptions import TransactionFailed
from eth_tester.exceptions import ValidationError as TesterValidationError
from eth_utils import ValidationError as EVMValidationError
from hexbytes import HexBytes
from web3 import Web3

from fedtopic.ledger import call_guard
from fedtopic.ledger.call_guard import (
    CALL_GAS_CAP,
    CALL_SECONDS,
    READ,
    SIMULATED,
    SIMULATED_CALLS,
    WRITE,
    WritesFirstLock,
)
from fedtopic.ledger.embedded import EmbeddedChain
from fedtopic.ledger.errors import LedgerError
from fedtopic.ledger.log_index import LogIndex, LogQueryError
from fedtopic.ledger.replay_guard import ForeignTransaction, check_raw_transaction
from fedtopic.ledger.rpc import tester_revert_data
from fedtopic.ledger.snapshot import SNAPSHOT_NAME, ChangeTrackingStore, SnapshotFile
from fedtopic.safe_json import UntrustedJSONError, loads_untrusted

JOURNALED = frozenset({"eth_sendRawTransaction", "eth_sendTransaction"})
PUBLIC_PREFIXES = ("eth_", "net_", "web3_")
# Methods that sign with a key the node holds: without --dev the chain holds none (parties sign their own).
SIGNING_METHODS = frozenset({"eth_sendTransaction", "eth_sign", "eth_signTransaction", "eth_signTypedData",
                             "eth_signTypedData_v3", "eth_signTypedData_v4"})
CHAIN_VALIDATION = (TesterValidationError, EVMValidationError)  # their messages are meant for the caller
INVALID_PARAMS = (TypeError, ValueError, AttributeError, KeyError, IndexError)  # Python's own: no detail
LEGACY_JOURNAL = "journal.jsonl"  # an earlier version's single journal: entries from 0
LOG_INDEX_NAME = "logs.sqlite3"
SNAPSHOT_EVERY = 500  # journal entries between two snapshots
MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_BATCH = 1000  # requests in one JSON-RPC batch
BATCH_SECONDS = 10.0  # a batch's calls together; the rest of a batch past it is answered without running
FILTER_METHODS = frozenset({"eth_newFilter", "eth_newBlockFilter", "eth_newPendingTransactionFilter",
                            "eth_getFilterChanges", "eth_getFilterLogs", "eth_uninstallFilter"})
"""Refused: fedtopic never uses filters (it reads logs by ranges), and eth-tester's are unbounded, shared by every
client and numbered in sequence (anyone could uninstall anyone's)."""
READ_TIMEOUT_S = 30.0
HEADER_TIMEOUT_S = 10.0  # a request line and headers, from a connection's opening or its last answer


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(w.title() for w in rest)


def to_json_rpc(value: Any, key: str = "") -> Any:
    """Standard JSON-RPC encoding of what the tester middleware returns.

    ints → hex quantities, bytes → hex data, the bloom as 256 bytes, and the eth-tester leftovers in
    nested transaction objects (snake_case keys, ``data`` for ``input``) renamed as clients expect.
    """
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return "0x" + value.to_bytes(256, "big").hex() if key == "logsBloom" else hex(value)
    if isinstance(value, (bytes, bytearray, HexBytes)):
        return "0x" + bytes(value).hex()
    if isinstance(value, Mapping):
        is_tx = "nonce" in value and "gas" in value and "data" in value
        return {("input" if is_tx and k == "data" else _camel(k)): to_json_rpc(v, _camel(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_rpc(v) for v in value]
    return value


def _journal_path(data_dir: Path, first: int) -> Path:
    """The journal file whose first entry is number ``first``."""
    return data_dir / f"journal-{first:012d}.jsonl"


def _journal_files(data_dir: Path) -> list[tuple[int, Path]]:
    """(first entry, path) of every journal file, oldest first."""
    found = [(0, data_dir / LEGACY_JOURNAL)] if (data_dir / LEGACY_JOURNAL).exists() else []
    for path in data_dir.glob("journal-*.jsonl"):
        try:
            found.append((int(path.stem.split("-", 1)[1]), path))
        except ValueError:
            continue
    return sorted(found)


def _journal_entry(raw: bytes) -> dict[str, Any] | None:
    """A journal line's entry ({"method": str, "params": list}), or None if the line is damaged."""
    try:
        entry = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    ok = isinstance(entry, dict) and isinstance(entry.get("method"), str) and isinstance(entry.get("params"), list)
    return entry if ok else None


def _journal_lines(path: Path, *, last_file: bool) -> list[tuple[int, dict[str, Any]]]:
    """(line number, entry) of every entry of a journal file. In the last file, a damaged last entry (cut short
    before its newline, garbled, or zeros) is dropped with a warning and the file cut before it, so that new
    entries append to a clean end; any other damaged line is LedgerError."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LedgerError(f"journal {path} cannot be read: {exc.strerror or exc}") from None
    end = data.rfind(b"\n") + 1  # what follows the last newline was never a whole entry
    lines = [(n, raw) for n, raw in enumerate(data[:end].split(b"\n"), start=1) if raw.strip(b" \t\r\x00")]
    torn = data[end:]
    out: list[tuple[int, dict[str, Any]]] = []
    for i, (lineno, raw) in enumerate(lines):
        entry = _journal_entry(raw)
        if entry is not None:
            out.append((lineno, entry))
        elif i == len(lines) - 1 and not torn.strip(b" \t\r\x00") and last_file:
            torn, end = raw + b"\n" + torn, data.rfind(raw)  # a garbled last line: dropped as a cut one is
        else:
            raise LedgerError(f"{path}:{lineno}: damaged journal entry; the chain cannot be replayed past it "
                              "(restore the data folder from a backup, or start a new one)")
    if torn:
        if not last_file:
            raise LedgerError(f"{path}: cut short in the middle of the journal (a later file follows it); restore "
                              "the data folder from a backup, or start a new one")
        with open(path, "r+b") as fh:
            fh.truncate(end)
        if torn.strip(b" \t\r\x00"):
            print(f"fedtopic chain up: {path}: dropped a torn last journal entry ({len(torn)} bytes: a crash cut it "
                  "short, so it was never answered)", file=sys.stderr, flush=True)
    return out


def _error_object(error: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-RPC error object: an integer ``code``, a string ``message``, ``data`` hex-encoded if bytes."""
    code = error.get("code", -32603)
    out: dict[str, Any] = {"code": int(code, 16) if isinstance(code, str) else int(code),
                           "message": str(error.get("message", ""))}
    if "data" in error:
        out["data"] = to_json_rpc(error["data"])
    return out


class ChainService:
    """The embedded chain behind one lock, with an optional journal for restarts."""

    def __init__(self, data_dir: Path | None = None, *, dev: bool = False,
                 snapshot_every: int = SNAPSHOT_EVERY, call_gas_cap: int = CALL_GAS_CAP,
                 call_seconds: float = CALL_SECONDS, faucet_key: bytes | None = None) -> None:
        """``faucet_key``: the one funded genesis account's key (a chain without --dev: only its operator can pay
        gas); None: eth-tester's well-known test accounts (--dev, and data folders from before faucet keys)."""
        self.dev = dev
        self.call_gas_cap, self.call_seconds = call_gas_cap, call_seconds
        call_guard.install()
        self.chain = EmbeddedChain(faucet_key=faucet_key)
        self._caller = Account.from_key(self.chain.faucet_key).address  # a call without "from" is the faucet's
        w3 = Web3(self.chain.provider)
        self._call = self.chain.provider.request_func(w3, w3.middleware_onion)
        self._lock = WritesFirstLock()
        self._journal: Any = None
        self._data_dir = data_dir
        self.snapshot_every = snapshot_every
        self.replayed = 0
        self.journal_entries = 0
        self.snapshot_entries = 0
        if data_dir is not None:
            data_dir.mkdir(parents=True, exist_ok=True)
            self._snapshots = SnapshotFile(data_dir)
            self.snapshot_entries = self._restore_snapshot(data_dir)
            self.replayed = self._replay(data_dir, skip=self.snapshot_entries)
            self.journal_entries = self.snapshot_entries + self.replayed
            self._journal = self._journal_file(data_dir).open("a", encoding="utf-8")
        self.index = LogIndex(None if data_dir is None else data_dir / LOG_INDEX_NAME, self._result)
        self.reindexed = self.index.catch_up(self._head())
        self.chain_id = int(self._result("eth_chainId", []), 16)

    def _inner_db(self) -> Any:
        return self.chain.backend.chain.chaindb.db.wrapped_db  # py-evm's MemoryDB under the AtomicDB

    def _restore_snapshot(self, data_dir: Path) -> int:
        """Load the snapshot into the chain (else track the fresh store); the journal entries it includes."""
        found = self._snapshots.load()
        if found is None:
            self._inner_db().kv_store = ChangeTrackingStore(self._inner_db().kv_store)  # the first snapshot: all
            return 0
        store, meta = found
        chain = self.chain.backend.chain
        self._inner_db().kv_store = store
        self.chain.backend.chain = type(chain)(chain.chaindb.db)
        if self._head() != int(meta["head"]):
            raise LedgerError(f"chain snapshot in {data_dir} ends at block {self._head()}, its sidecar says "
                              f"{meta['head']}; remove {SNAPSHOT_NAME} to replay the whole journal")
        return int(meta["journal_entries"])

    def snapshot(self) -> None:
        """Append what changed to the snapshot, then start a journal file (the lock is held or the service is
        idle); the journal files the snapshot covers are deleted."""
        if self._data_dir is None:
            return
        self._snapshots.save(self._inner_db().kv_store, journal_entries=self.journal_entries, head=self._head())
        self.snapshot_entries = self.journal_entries
        if self._journal is not None:
            self._journal.close()
            old = _journal_files(self._data_dir)
            self._journal = _journal_path(self._data_dir, self.journal_entries).open("a", encoding="utf-8")
            for _, path in old:
                path.unlink(missing_ok=True)

    def _journal_file(self, data_dir: Path) -> Path:
        """The journal file new entries go to: the newest one, or a fresh one after the snapshot's entries."""
        files = _journal_files(data_dir)
        return files[-1][1] if files else _journal_path(data_dir, self.journal_entries)

    def _replay(self, data_dir: Path, skip: int = 0) -> int:
        """Apply the journal entries after the first ``skip`` (those the snapshot holds); how many were applied.

        The journal is a write-ahead log: its last line, torn by a crash mid-write (cut short, garbled, or the
        zeros a file system may leave after a power cut), was never answered, so it is dropped with a warning. A
        damaged line before the last is LedgerError in one line: the chain cannot be replayed past it."""
        count = 0
        files = _journal_files(data_dir)
        for number, (start, path) in enumerate(files):
            lines = _journal_lines(path, last_file=number == len(files) - 1)
            for seen, (lineno, entry) in enumerate(lines, start=start + 1):
                if seen <= skip:
                    continue
                if entry["method"].startswith("evm_") and not self.dev:
                    raise LedgerError(f"{path}:{lineno}: the journal holds test controls ({entry['method']}): "
                                      "restart this chain with --dev")
                try:
                    response = self._call(entry["method"], entry["params"])
                except Exception as exc:  # noqa: BLE001 - py-evm's validation, the tester's: the entry's fault
                    response = {"error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"}
                if "error" in response:
                    raise LedgerError(f"{path}:{lineno}: journal entry no longer applies: {response['error']}")
                count += 1
        return count

    def _result(self, method: str, params: list) -> Any:
        """One call's result in standard JSON-RPC encoding (for the index; the caller holds the lock or is alone)."""
        response = self._call(method, params)
        if "error" in response:
            raise LedgerError(f"{method}: {response['error']}")
        return to_json_rpc(response["result"])

    def _head(self) -> int:
        return int(self._result("eth_blockNumber", []), 16)

    def _logs(self, rid: Any, params: Any) -> dict[str, Any]:
        """eth_getLogs from the index, without the chain's lock."""
        flt = params[0] if isinstance(params, list) and len(params) == 1 else None
        try:
            if flt is None:
                raise LogQueryError("eth_getLogs takes one filter object")
            logs = self.index.query(flt, self.index.head, self._block_of_hash)
        except LogQueryError as exc:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": str(exc)}}
        return {"jsonrpc": "2.0", "id": rid, "result": logs}

    def _block_of_hash(self, block_hash: str) -> int:
        with self._lock.hold(READ):
            try:
                block = self._result("eth_getBlockByHash", [block_hash, False])
            except Exception:  # noqa: BLE001 - py-evm's ValidationError, the tester's error: the caller's hash
                raise LogQueryError(f"bad block hash {block_hash[:80]!r}") from None
        if block is None:
            raise LogQueryError(f"no block {block_hash}")
        return int(block["number"], 16)

    def _after(self, method: str, result: Any) -> None:
        """Keep the index in step with a state change that succeeded (the lock is held). The change stands
        whatever happens here: a failure is one log line, and the next change catches the index up."""
        try:
            if method == "evm_revert":
                self.index.truncate(self._head())
            else:
                self.index.catch_up(self._head())
        except Exception as exc:  # noqa: BLE001 - the transaction is mined; its answer must reach the caller
            print(f"fedtopic chain up: log index behind after {method} ({type(exc).__name__}: {exc}); "
                  "it catches up on the next transaction", file=sys.stderr, flush=True)

    def handle(self, request: Any) -> dict[str, Any]:
        """Answer one JSON-RPC request object; whatever goes wrong is an error object, never a dropped connection."""
        try:
            return self._dispatch(request)
        except Exception as exc:  # noqa: BLE001 - one request's failure must not end the connection
            rid = request.get("id") if isinstance(request, dict) else None
            print(f"fedtopic chain up: request failed: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr,
                  flush=True)
            return {"jsonrpc": "2.0", "id": rid if isinstance(rid, (str, int, float)) else None,
                    "error": {"code": -32603, "message": "internal error"}}

    def _dispatch(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict):
            return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "a request is a JSON object"}}
        rid = request.get("id")
        if not (rid is None or isinstance(rid, (str, int, float))) or isinstance(rid, bool):
            return {"jsonrpc": "2.0", "id": None,
                    "error": {"code": -32600, "message": "a request id is a string, a number or null"}}
        method, params = request.get("method"), request.get("params", [])
        if method == "eth_getLogs":
            return self._logs(rid, params)
        if method == "fedtopic_logStats":  # read-only, from the index: what `ledger status` needs
            try:
                args = params if isinstance(params, list) else []
                return {"jsonrpc": "2.0", "id": rid,
                        "result": self.index.stats(args[0] if args else None, args[1] if len(args) > 1 else None)}
            except LogQueryError as exc:
                return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": str(exc)}}
        if not isinstance(method, str):
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32600, "message": "missing method"}}
        if not (method.startswith(PUBLIC_PREFIXES) or (self.dev and method.startswith(("evm_", "testing_")))):
            return {"jsonrpc": "2.0", "id": rid,
                    "error": {"code": -32601, "message": f"method {method[:64]!r} not found"
                              + ("" if self.dev else " (test controls need `chain up --dev`)")}}
        if method in FILTER_METHODS:
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"{method}: this chain serves "
                                                           "no filters; read logs with eth_getLogs by block range"}}
        if not self.dev and method == "eth_accounts":
            return {"jsonrpc": "2.0", "id": rid, "result": []}
        if not self.dev and method in SIGNING_METHODS:
            return {"jsonrpc": "2.0", "id": rid,
                    "error": {"code": -32601, "message": f"{method}: this chain holds no unlocked account; sign the "
                              "transaction yourself and send it with eth_sendRawTransaction"}}
        if method == "eth_sendRawTransaction":
            try:  # before the lock: a foreign transaction costs the chain nothing
                check_raw_transaction(params, self.chain_id, allow_unprotected=self.dev)
            except ForeignTransaction as exc:
                return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": str(exc)}}
        writes = method in JOURNALED or method.startswith("evm_")
        level = WRITE if writes else SIMULATED if method in SIMULATED_CALLS else READ
        with self._lock.hold(level):
            return self._locked_call(rid, method, params, writes)

    def _locked_call(self, rid: Any, method: str, params: Any, writes: bool) -> dict[str, Any]:
        """Run one call into py-evm (the lock is held): simulated calls under the gas and time caps, state changes
        journaled before they are answered."""
        try:
            if method in SIMULATED_CALLS:
                with call_guard.time_capped(self.call_seconds, self._lock.waiting_ahead_of_simulated):
                    response = self._call(method, call_guard.gas_capped(params, self.call_gas_cap, self._caller))
            else:
                response = self._call(method, params)
        except TransactionFailed as exc:
            data = tester_revert_data(exc)
            return {"jsonrpc": "2.0", "id": rid,
                    "error": {"code": 3, "message": "execution reverted", "data": "0x" + data.hex()}}
        except call_guard.CallTimeExceeded as exc:
            why = (f"{method} yielded to waiting callers after {call_guard.PREEMPT_AFTER_S:g} s; send it again"
                   if call_guard.YIELDED in str(exc) else f"{method} ran past its time cap of {self.call_seconds:g} s")
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": why}}
        except CHAIN_VALIDATION as exc:
            detail = " ".join(str(exc).split())[:300]
            return {"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32602, "message": f"invalid params for {method}: {detail}"}}
        except INVALID_PARAMS:
            return {"jsonrpc": "2.0", "id": rid, "error": {
                "code": -32602, "message": f"invalid params for {method}"}}
        except Exception as exc:  # noqa: BLE001 - any failure becomes a JSON-RPC error for the caller
            print(f"fedtopic chain up: {method} failed: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr,
                  flush=True)
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": f"internal error in {method}"}}
        if "error" in response:
            error = _error_object(response["error"])
            if "Unknown RPC Endpoint" in str(error.get("message", "")):  # eth-tester echoes the whole name back
                error = {"code": -32601, "message": f"method {method[:64]!r} not found"}
            return {"jsonrpc": "2.0", "id": rid, "error": error}
        if writes and self._journal is not None:
            self._journal.write(json.dumps({"method": method, "params": params}) + "\n")
            self._journal.flush()
            self.journal_entries += 1
            if self.journal_entries - self.snapshot_entries >= self.snapshot_every:
                self.snapshot()
        if writes:
            self._after(method, response["result"])
        return {"jsonrpc": "2.0", "id": rid, "result": to_json_rpc(response["result"])}

    def close(self) -> None:
        if self._journal is not None:
            with self._lock.hold(WRITE):
                if self.journal_entries > self.snapshot_entries:
                    self.snapshot()  # a clean stop restarts without replaying anything
            self._journal.close()
            self._journal = None
        self.index.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = READ_TIMEOUT_S  # a client that stalls mid-request (or idles on keep-alive) is dropped
    server: "ChainHTTPServer"

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle_one_request(self) -> None:
        """One request, its request line and headers within the server's header deadline (slowloris)."""
        self.server.headers_due(self.connection)
        try:
            super().handle_one_request()
        finally:
            self.server.headers_in(self.connection)

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        self.server.headers_in(self.connection)  # the body is the read timeout's
        return parsed

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        raw_length = self.headers.get("Content-Length", "0")
        length = int(raw_length) if raw_length.isdigit() else -1
        if length <= 0 or length > MAX_BODY_BYTES:
            self._reply(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "bad body length"}})
            return
        try:
            body = loads_untrusted(self.rfile.read(length))
        except UntrustedJSONError as exc:
            self._reply(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": f"parse error: {exc}"}})
            return
        service = self.server.service
        if isinstance(body, list) and not 0 < len(body) <= MAX_BATCH:
            self._reply(400, {"jsonrpc": "2.0", "id": None,
                              "error": {"code": -32600, "message": f"a batch holds 1 to {MAX_BATCH} requests"}})
            return
        answer = _batch(service, body) if isinstance(body, list) else service.handle(body)
        self._reply(200, answer)

    def _reply(self, status: int, payload: Any) -> None:
        data = json.dumps(payload, allow_nan=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: one line per call is noise
        return


def _batch(service: ChainService, requests: list[Any]) -> list[dict[str, Any]]:
    """A batch's answers in order, its calls run one by one (each queues for the chain as any caller does) until
    they have taken ``BATCH_SECONDS`` together; the rest are answered with an error, not run."""
    started, out = time.monotonic(), []
    for request in requests:
        if time.monotonic() - started > BATCH_SECONDS:
            rid = request.get("id") if isinstance(request, dict) else None
            out.append({"jsonrpc": "2.0", "id": rid if isinstance(rid, (str, int, float)) else None,
                        "error": {"code": -32005, "message": f"the batch ran past its {BATCH_SECONDS:g} s; "
                                  "send the rest again"}})
            continue
        out.append(service.handle(request))
    return out


class ChainHTTPServer(ThreadingHTTPServer):
    """HTTP JSON-RPC server for a :class:`ChainService`."""

    daemon_threads = True
    # socketserver's listen backlog is 5: a burst of connections (300 slowloris clients, a consortium's nodes
    # starting at once) filled it, and every later SYN, an honest client's too, waited out TCP's 1, 3, 7 s retries
    request_queue_size = socket.SOMAXCONN

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line per failed connection (a client that hung up, a stalled one dropped), never a traceback."""
        exc = sys.exc_info()[1]
        print(f"fedtopic chain up: connection from {client_address[0]}:{client_address[1]} ended: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)

    def __init__(self, host: str, port: int, service: ChainService, *, read_timeout: float = READ_TIMEOUT_S,
                 header_timeout: float = HEADER_TIMEOUT_S) -> None:
        self.service = service
        self.header_timeout = header_timeout
        self._due: dict[socket.socket, float] = {}  # connections waiting for a request's headers → deadline
        self._due_lock = threading.Lock()
        self._closed = threading.Event()
        handler = type("_TimedHandler", (_Handler,), {"timeout": read_timeout})
        super().__init__((host, port), handler)
        threading.Thread(target=self._drop_late_headers, name="header-deadline", daemon=True).start()

    def headers_due(self, conn: socket.socket) -> None:
        """``conn`` waits for a request line and headers: due within ``header_timeout``."""
        with self._due_lock:
            self._due[conn] = time.monotonic() + self.header_timeout

    def headers_in(self, conn: socket.socket) -> None:
        with self._due_lock:
            self._due.pop(conn, None)

    def _drop_late_headers(self) -> None:
        """Shut every connection whose headers are late (a client trickling bytes resets the read timeout)."""
        while not self._closed.wait(0.5):
            now = time.monotonic()
            with self._due_lock:
                late = [conn for conn, due in self._due.items() if due < now]
                for conn in late:
                    del self._due[conn]
            for conn in late:
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def server_close(self) -> None:
        self._closed.set()
        super().server_close()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"
