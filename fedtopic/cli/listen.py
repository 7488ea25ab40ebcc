"""The listening socket of a server command (`aggregator serve`, `dashboard`), bound before the server starts: a
port in use or an address not on this machine is one line naming both, not the server's startup traceback."""

from __future__ import annotations

import socket

from fedtopic.errors import ConfigError


def listening_socket(host: str, port: int, command: str, *, port_zero: bool = False) -> socket.socket:
    """A TCP socket bound to ``host``:``port``, for the server to listen on; ConfigError in one line naming
    ``command`` if it cannot be bound (``port_zero``: the command takes --port 0 for a free port, and says so)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"{command}: cannot listen on {host}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a restart reuses a TIME_WAIT port
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        free = " (0: a free one)" if port_zero else ""
        hint = f"; another process listens there: pick another --port{free}" \
            if exc.errno in (98, 48) else ""  # EADDRINUSE on Linux, macOS
        raise ConfigError(f"{command}: cannot listen on {host}:{port}: {exc.strerror}{hint}") from None
    sock.set_inheritable(True)
    return sock
