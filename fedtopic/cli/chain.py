"""``fedtopic chain up``: serve the embedded chain over HTTP JSON-RPC for separate node processes."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType

import typer

from fedtopic.ledger.errors import LedgerError
from fedtopic.ledger.server import ChainHTTPServer, ChainService

app = typer.Typer(help="Run a local EVM chain for a consortium.", no_args_is_help=True)


@app.command()
def up(
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8545, help="TCP port (0 picks a free one; the URL printed tells which)."),
    data: Path | None = typer.Option(None, help="Directory for the transaction journal; restarting with it restores the chain."),
    dev: bool = typer.Option(False, "--dev", help="A throwaway chain: also answer the test controls (evm_snapshot, evm_revert, evm_mine, ...)."),
    read_timeout: float = typer.Option(30.0, min=0.1, help="Seconds a connection may stall mid-request or idle before it is dropped."),
) -> None:
    """Serve an embedded py-evm chain at http://HOST:PORT until SIGTERM or Ctrl-C (standard eth_/net_/web3_
    methods only, unless --dev)."""
    service = ChainService(data, dev=dev)
    try:
        server = ChainHTTPServer(host, port, service, read_timeout=read_timeout)
    except OSError as exc:
        service.close()
        raise LedgerError(f"cannot listen on {host}:{port}: {exc.strerror}") from None

    def stop(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    restored = f", {service.replayed} transactions replayed from {data}" if service.replayed else ""
    typer.echo(f"fedtopic chain up: serving {server.url} (chain id {service.chain.tester.backend.chain.chain_id}{restored})",
               nl=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        service.close()
        typer.echo("fedtopic chain up: stopped")
