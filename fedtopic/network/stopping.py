"""A run in this process is stopping (Ctrl-C in `simulate`): every aggregator client gives up at its next retry
instead of waiting out its patience for an aggregator its launcher has already stopped."""

from __future__ import annotations

import threading

STOPPING = threading.Event()


def stop_clients() -> None:
    """Make every client of this process give up at its next retry or poll (``AggregatorUnavailable``)."""
    STOPPING.set()


def start_clients() -> None:
    """Let the clients of a new run in this process retry again."""
    STOPPING.clear()
