"""A node's sign of life to its aggregator while it computes: one signed request every ``HEARTBEAT_SECONDS``.

A synchronous round can compute for minutes (Paillier, a large K) without any exchange; the aggregator's
``/status`` (``last_seen_at``) and the dashboards that read it then could not tell a busy party from a killed
one. The heartbeat is a signed ``GET`` of the session (no body, nothing stored) on its own connection; a failed
one is skipped silently (the exchanges have their own patience and errors).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType

HEARTBEAT_SECONDS = 2.0


class Heartbeat:
    """Calls ``ping`` every ``every`` seconds on a daemon thread while the ``with`` block runs."""

    def __init__(self, ping: Callable[[], object], every: float = HEARTBEAT_SECONDS) -> None:
        self._ping, self._every = ping, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            try:
                self._ping()
            except Exception:  # noqa: BLE001 - a missed heartbeat is harmless; the next one tries again
                continue

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=self._every + 6.0)  # a ping in flight times out after 5 s
