"""`fedtopic dashboard PATH`: watch a run or a consortium live in the browser."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated, Optional

import typer

from fedtopic.cli.listen import listening_socket
from fedtopic.cli.output import stderr_console, stdout_console
from fedtopic.errors import ConfigError
from fedtopic.network.tls import is_loopback

MIN_TOKEN_CHARS = 16


def dashboard(
    path: Annotated[Path, typer.Argument(help="a run folder (simulate, train, experiment, demo), or a consortium.toml "
                                              "with --party")],
    port: Annotated[int, typer.Option(min=0, max=65535, help="port (0: a free one)")] = 8600,
    host: Annotated[str, typer.Option(help="address to bind; anything but loopback needs --token")] = "127.0.0.1",
    party: Annotated[Optional[str], typer.Option(help="consortium.toml: watch as this party (its history and "  # noqa: UP007
                                                      "model, what the aggregator or chain shows every member)")] = None,
    state: Annotated[Optional[Path], typer.Option(help="consortium.toml: the party's state folder (default "  # noqa: UP007
                                                       "state/<party> beside the config)")] = None,
    rpc: Annotated[Optional[str], typer.Option(help="consortium.toml: JSON-RPC URL (default: chain.rpc)")] = None,  # noqa: UP007
    url: Annotated[Optional[str], typer.Option(help="consortium.toml: the aggregator's URL (default: aggregator.url)")] = None,  # noqa: UP007
    insecure: Annotated[bool, typer.Option("--insecure", help="consortium.toml: allow plain HTTP to a non-loopback "
                                                              "aggregator (its /status crosses the network in clear)")] = False,
    token: Annotated[Optional[str], typer.Option(envvar="FEDTOPIC_DASHBOARD_TOKEN",  # noqa: UP007
                                                 help="the token every request needs (≥ 16 characters; default: a "
                                                      "new one per start, in the printed URL); required to bind a "
                                                      "non-loopback --host ('generate' makes one)")] = None,
) -> None:
    """Serve the live dashboard of a run or of one party's view of a consortium (read-only, but for topic labels)."""
    import uvicorn

    from fedtopic.dashboard.app import allowed_hosts, create_app
    from fedtopic.dashboard.board import Board
    from fedtopic.dashboard.sources import open_source

    if not is_loopback(host):
        if token is None:
            raise ConfigError(f"--host {host} is not loopback: give --token (at least {MIN_TOKEN_CHARS} characters, "
                              "or 'generate'), or reach 127.0.0.1 through an SSH tunnel (README)")
    if token is None or token == "generate":  # per start, as Jupyter's: a page of another site cannot know it
        token = secrets.token_urlsafe(24)
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"--token must have at least {MIN_TOKEN_CHARS} characters")
    board = Board(open_source(path, party=party, state_dir=state, rpc=rpc, url=url, insecure=insecure))
    try:
        sock = listening_socket(host, port, "dashboard", port_zero=True)
        config = uvicorn.Config(create_app(board, token=token, hosts=allowed_hosts(host)), log_level="warning",
                                access_log=False, lifespan="off")
        server = uvicorn.Server(config)
        shown = f"[{host}]" if ":" in host else host

        def announce() -> None:
            bound = server.servers[0].sockets[0].getsockname()[1] if server.servers else port
            query = f"/?token={token}"
            stdout_console.print(f"dashboard of {path}: http://{shown}:{bound}{query}", highlight=False, soft_wrap=True)
            stderr_console.print("Ctrl-C stops it", highlight=False)

        _serve(server, sock, announce)
    finally:
        board.close()


def _serve(server: object, sock: object, announce: object) -> None:
    """Run uvicorn on ``sock``, saying the URL once it listens (with the real port when --port 0)."""
    import asyncio

    async def main() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))  # type: ignore[attr-defined]
        for _ in range(200):  # at most 10 s for the socket to bind
            if getattr(server, "started", False) or task.done():
                break
            await asyncio.sleep(0.05)
        if getattr(server, "started", False):
            announce()  # type: ignore[operator]
        await task

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    if not getattr(server, "started", False):
        raise ConfigError("the dashboard could not listen (is the port in use? try --port 0)")
