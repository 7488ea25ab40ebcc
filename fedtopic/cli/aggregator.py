"""`fedtopic aggregator serve`: run the CSFed aggregator for a consortium (FastAPI + uvicorn).

It binds 127.0.0.1 unless ``--host`` is given explicitly: the consortium
file's ``aggregator.url`` tells parties where to connect, it never widens
what this process listens on.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Optional
from urllib.parse import urlsplit

import typer

from fedtopic.cli.listen import listening_socket
from fedtopic.consortium.config import load_consortium
from fedtopic.errors import ConfigError
from fedtopic.network.app import create_app
from fedtopic.network.settings import AggregatorSettings
from fedtopic.network.tls import KEY_NAME, TLS_DIR, is_loopback

app = typer.Typer(
    name="aggregator",
    help="The CSFed aggregator: collects one signed update per party per round and serves the aggregate.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command("serve")
def serve(
    config: Annotated[Path, typer.Option("--config", help="The consortium.toml (parties' addresses, aggregator section).")],
    host: Annotated[
        Optional[str],  # noqa: UP007 (typer needs Optional here)
        typer.Option("--host", help="Address to bind. Default 127.0.0.1; anything else must be given here."),
    ] = None,
    port: Annotated[
        Optional[int],  # noqa: UP007
        typer.Option("--port", min=1, max=65535, help="Port. Default: the port of aggregator.url, else 8000."),
    ] = None,
    data: Annotated[Path, typer.Option("--data", help="State directory (SQLite); reuse it to resume.")] = Path(
        "aggregator-data"),
    max_body_mb: Annotated[float, typer.Option("--max-body-mb", min=0.001, help="Largest request body, MiB.")] = 256.0,
    max_wait: Annotated[float, typer.Option("--max-wait", min=0.1, max=600, help="Longest long-poll, s.")] = 30.0,
    memory_budget_mb: Annotated[float, typer.Option("--memory-budget-mb", min=1, help="Largest memory one session's round may hold (parties × largest update + combine arrays), MiB.")] = 2048.0,
    read_timeout: Annotated[float, typer.Option("--read-timeout", min=0.1, max=3600, help="Seconds a request body may take to arrive before it is dropped.")] = 60.0,
    keep_alive: Annotated[int, typer.Option("--keep-alive", min=1, max=3600, help="Seconds an idle connection stays open for the party's next request.")] = 30,
    access_log: Annotated[bool, typer.Option("--access-log/--no-access-log", help="Log every request (uvicorn's access log; a gFedNTM step makes 30 per party). Without it: sessions, refusals, rounds closing, stragglers.")] = False,
    header_timeout: Annotated[float, typer.Option("--header-timeout", min=0.5, max=600.0, help="Drop a connection whose request headers are not all in within this many seconds (slow-header clients, slowloris).")] = 10.0,
    tls_key: Annotated[Optional[Path], typer.Option("--tls-key", help="With aggregator.tls_cert in the config: its private key (default tls/aggregator.key beside the config).")] = None,  # noqa: UP007
) -> None:
    """Serve the aggregator until interrupted; a restart with the same --data resumes every open round."""
    import uvicorn

    from fedtopic.runs.folder_lock import hold_folder
    from fedtopic.runs.private import keep_private
    from fedtopic.runs.process import raise_open_files_limit, stop_with_parent

    keep_private(data)  # every party's updates (in clear under none), aggregates, the session store
    stop_with_parent()  # started by simulate: end with it, even when it was killed
    raise_open_files_limit()  # a connection per waiting party: 1,000 parties pass a soft limit of 1,024

    consortium = load_consortium(config)
    settings = AggregatorSettings.from_consortium(consortium, data, max_body_bytes=int(max_body_mb * 2**20),
                                                  max_wait_seconds=max_wait,
                                                  memory_budget_bytes=int(memory_budget_mb * 2**20),
                                                  read_timeout_seconds=read_timeout, keep_alive_seconds=keep_alive)
    url = urlsplit(consortium.aggregator.url)
    bind = host if host is not None else "127.0.0.1"
    if host is None and url.hostname and not is_loopback(url.hostname):
        typer.echo(f"note: aggregator.url names {url.hostname}, but binding 127.0.0.1 only; pass --host to listen "
                   "elsewhere", err=True)
    tls: dict[str, str] = {}
    cert = consortium.aggregator.tls_cert_file(config.parent)
    if cert is not None:
        key = tls_key or config.parent / TLS_DIR / KEY_NAME
        for path, what in ((cert, "aggregator.tls_cert"), (key, "--tls-key")):
            if not path.is_file():
                raise ConfigError(f"{what} {path} does not exist (`fedtopic consortium tls` writes both)")
        tls = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
    elif url.scheme == "https":
        raise ConfigError("aggregator.url is https but aggregator.tls_cert is not set: run `fedtopic consortium tls`")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from fedtopic.network.header_deadline import header_deadline_protocol

    hold_folder(data, "aggregator serve")  # one process per state folder (once the config is known good)
    sock = listening_socket(bind, port or url.port or 8000, "aggregator serve")
    shown = f"[{bind}]" if ":" in bind else bind
    logging.getLogger("fedtopic.aggregator").info("serving %s://%s:%d (Ctrl-C stops it)", "https" if tls else "http",
                                                  shown, sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="info", access_log=access_log,
                                           timeout_keep_alive=settings.keep_alive_seconds,
                                           http=header_deadline_protocol(header_timeout), **tls))
    server.run(sockets=[sock])
