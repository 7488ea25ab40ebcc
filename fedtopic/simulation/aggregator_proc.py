"""The aggregator as a child process on a free 127.0.0.1 port (``fedtopic simulate``, the timing experiment).

The child is ``python -m fedtopic.cli.main aggregator serve`` importing the
same fedtopic as this process; it is stopped by its PID (SIGTERM, then SIGKILL
after a grace period) and its log is kept in the run's folder. On Linux the
kernel also stops it when this process dies, even by kill -9
(``runs.process.stop_with_parent``): a crashed simulation leaves no server.
"""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import urllib3

from fedtopic.errors import NetworkError
from fedtopic.ledger.local_nodes import free_port
from fedtopic.network.tls import url_host
from fedtopic.runs.process import STOP_WITH_PARENT

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding fedtopic/


def _check_free(port: int, host: str = "127.0.0.1") -> None:
    """NetworkError in one line if ``host``:``port`` is taken or not this machine's (the child would die with a log
    line only)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a port in TIME_WAIT is free
        try:
            s.bind((host, port))
        except OSError as exc:
            raise NetworkError(f"cannot serve the aggregator on {host}:{port}: {exc.strerror}") from None


class AggregatorProcess:
    """One ``fedtopic aggregator serve --config CONFIG --data DATA`` child on 127.0.0.1, or on ``host`` (an address
    of this machine that other machines reach: a Ray cluster's parties), as a context manager."""

    def __init__(self, config: Path, data: Path, log: Path, *, port: int | None = None, host: str = "127.0.0.1",
                 startup_timeout: float = 60.0, extra_args: Sequence[str] = ()) -> None:
        _check_free(port or 0, host)
        self.port = port or free_port(host)
        from fedtopic.consortium.config import load_consortium

        cert = load_consortium(config).aggregator.tls_cert_file(config.parent)
        tls = {} if cert is None else {"ssl_context": ssl.create_default_context(cafile=str(cert))}  # its pin
        self._health = urllib3.PoolManager(retries=False, timeout=1.0, **tls)
        self.url = f"{'http' if cert is None else 'https'}://{url_host(host)}:{self.port}"
        self.log = log
        env = {**os.environ, "PYTHONPATH": str(_PACKAGE_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               STOP_WITH_PARENT: str(os.getpid())}  # the child ends with this process, even one killed -9
        cmd = [sys.executable, "-m", "fedtopic.cli.main", "aggregator", "serve", "--config", str(config),
               "--port", str(self.port), "--data", str(data), *(["--host", host] if host != "127.0.0.1" else []),
               *extra_args]
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            # its own session: a Ctrl-C in the terminal reaches the command that started it, which stops it
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self._wait_healthy(startup_timeout)

    def _wait_healthy(self, timeout: float) -> None:
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            if self.proc.poll() is not None:
                raise NetworkError(f"the aggregator exited with code {self.proc.returncode}; see {self.log}")
            try:
                if self._health.request("GET", self.url + "/healthz").status == 200:
                    return
            except urllib3.exceptions.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise NetworkError(f"the aggregator did not answer /healthz within {timeout:.0f} s; see {self.log}")

    def kill9(self) -> None:
        """Kill the child at once (crash tests)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM by PID, SIGKILL after ``grace`` seconds (its long-polls may hold a graceful shutdown that long)."""
        self._health.clear()
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.kill9()

    def __enter__(self) -> AggregatorProcess:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        # Ctrl-C: the launcher stops within a second, its aggregator's state is the run's scratch
        self.stop(grace=1.0 if kind is not None and issubclass(kind, KeyboardInterrupt) else 10.0)
