"""``fedtopic chain up``: serve the embedded chain over HTTP JSON-RPC for separate node processes."""

from __future__ import annotations

import secrets
import signal
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType

import typer

from fedtopic.crypto.keys import read_hex_key, write_secret
from fedtopic.ledger.call_guard import CALL_GAS_CAP, CALL_SECONDS
from fedtopic.ledger.errors import LedgerError
from fedtopic.ledger.server import ChainHTTPServer, ChainService

FAUCET_FILE = "faucet.key"

app = typer.Typer(help="Run a local EVM chain for a consortium.", no_args_is_help=True)


@app.command()
def up(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8545, min=0, max=65535, help="TCP port (0 picks a free one; the URL printed tells which)."),
    data: Path | None = typer.Option(None, help="Directory for the transaction journal; restarting with it restores the chain."),
    dev: bool = typer.Option(False, "--dev", help="A throwaway chain: also answer the test controls (evm_snapshot, evm_revert, evm_mine, ...)."),
    read_timeout: float = typer.Option(30.0, min=0.1, help="Seconds a connection may stall mid-request or idle before it is dropped."),
    header_timeout: float = typer.Option(10.0, min=0.5, help="Seconds a request line and its headers may take, from a connection's opening or its last answer (slowloris)."),
    engine: str = typer.Option("embedded", help="embedded (py-evm, this process) or anvil (the scale path; its state in DATA/anvil-state.json)."),
    snapshot_every: int = typer.Option(500, min=1, help="embedded with --data: snapshot the chain every N journaled transactions (a restart replays only the rest)."),
    call_gas_cap: int = typer.Option(CALL_GAS_CAP, min=21_000, help="embedded: gas an eth_call or eth_estimateGas may use at most, whatever it asks."),
    call_seconds: float = typer.Option(CALL_SECONDS, min=0.05, max=600, help="embedded: seconds an eth_call or eth_estimateGas may run before it ends as out of gas (reads never hold up publications for longer)."),
    anvil_save_seconds: int = typer.Option(10, min=1, help="anvil with --data: write its whole state every N seconds (a kill -9 loses at most the last N; each write costs time in proportion to the chain)."),
) -> None:
    """Serve a chain at http://HOST:PORT until SIGTERM or Ctrl-C: the embedded py-evm chain (standard
    eth_/net_/web3_ methods only, unless --dev), or anvil (--engine anvil, a development engine: needs --dev)."""
    from fedtopic.runs.folder_lock import hold_folder
    from fedtopic.runs.private import keep_private

    keep_private(*([] if data is None else [data]))  # the journal, snapshots and faucet key: owner only
    if data is not None:
        hold_folder(data, "chain up")  # one process per state folder
    if engine == "anvil":
        _anvil(host, port, data, dev, anvil_save_seconds)
        return
    if engine != "embedded":
        raise LedgerError(f"unknown --engine {engine!r}: choose embedded or anvil")
    faucet_path, faucet_key = (None, None) if dev else _faucet(data)
    service = ChainService(data, dev=dev, snapshot_every=snapshot_every, call_gas_cap=call_gas_cap,
                           call_seconds=call_seconds, faucet_key=faucet_key)
    try:
        server = ChainHTTPServer(host, port, service, read_timeout=read_timeout, header_timeout=header_timeout)
    except OSError as exc:
        service.close()
        raise LedgerError(f"cannot listen on {host}:{port}: {exc.strerror}") from None

    def stop(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    restored = (f", {service.snapshot_entries} transactions from the snapshot and {service.replayed} replayed from "
                f"{data}" if service.snapshot_entries or service.replayed else "")
    faucet = "" if faucet_path is None else f"; faucet key in {faucet_path}"
    typer.echo(f"fedtopic chain up: serving {server.url} (chain id {service.chain.tester.backend.chain.chain_id}"
               f"{restored}{faucet})", nl=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        service.close()
        typer.echo("fedtopic chain up: stopped")


def _faucet(data: Path | None) -> tuple[Path | None, bytes | None]:
    """(file, key) of the faucet of a chain served without --dev: DATA/faucet.key (made at the first start, mode
    0600), or a new one in a fresh temporary folder without --data. A data folder journaled before faucet keys keeps
    eth-tester's well-known accounts (its genesis), said on stderr."""
    if data is not None:
        path = data / FAUCET_FILE
        if path.is_file():
            return path, read_hex_key(path, "faucet key file")
        if data.is_dir() and any(data.glob("journal*.jsonl")):
            typer.echo(f"fedtopic chain up: {data} was made before faucet keys: its funded accounts use eth-tester's "
                       "well-known test keys (anyone can sign for them); start a new --data folder", err=True)
            return None, None
        data.mkdir(parents=True, exist_ok=True)
    folder = data if data is not None else Path(tempfile.mkdtemp(prefix="fedtopic-chain-"))
    path = folder / FAUCET_FILE
    key = secrets.token_bytes(32)
    return write_secret(path, (key.hex() + "\n").encode()), key


def _die_with_parent() -> None:
    """In the anvil child, before exec: SIGTERM it when `chain up` dies, even by SIGKILL (Linux prctl
    PR_SET_PDEATHSIG), so no orphaned anvil keeps the port; SIGTERM still lets anvil dump its state."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGTERM)


def _anvil(host: str, port: int, data: Path | None, dev: bool, save_seconds: int) -> None:
    """anvil as the chain: state loaded from and dumped to DATA/anvil-state.json (every ``save_seconds`` and on
    exit). anvil writes its whole state each time (326 MB at 10,500 blocks of a 20-party consortium), so a
    1-second interval kept it busy writing and made reads 40× slower; 10 s is the default."""
    import subprocess
    import time

    from fedtopic.ledger.local_nodes import ANVIL_BINARY, free_port

    if not dev:
        raise LedgerError("anvil answers its test controls (evm_revert, anvil_setBalance, ...) to anyone: "
                          "pass --dev to confirm this is a development chain")
    if not ANVIL_BINARY.exists():
        raise LedgerError(f"anvil not found at {ANVIL_BINARY}: run `npm install` in contracts/")
    port = port or free_port()
    cmd = [str(ANVIL_BINARY), "--host", host, "--port", str(port), "--silent"]
    if data is not None:
        data.mkdir(parents=True, exist_ok=True)
        cmd += ["--state", str(data / "anvil-state.json"), "--state-interval", str(save_seconds)]
    proc = subprocess.Popen(cmd, preexec_fn=_die_with_parent if sys.platform == "linux" else None)
    stopping = threading.Event()

    def stop(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    import socket

    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise LedgerError(f"anvil exited with code {proc.returncode}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise LedgerError("anvil did not answer within 60 s") from None
            time.sleep(0.1)
    typer.echo(f"fedtopic chain up: serving http://{host}:{port} (anvil, chain id 31337)", nl=True)
    try:
        while not stopping.wait(0.2) and proc.poll() is None:
            pass
    finally:
        if proc.poll() is None:
            proc.terminate()  # anvil dumps its state on a clean exit
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        typer.echo("fedtopic chain up: stopped")
