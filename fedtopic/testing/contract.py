"""What every contract check shares: the error a broken clause raises, and the clause runner."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fedtopic.errors import FedTopicError


class ConformanceError(FedTopicError):
    """A registered entry breaks its kind's contract; the message names the entry, the clause and what happened."""


class Clauses:
    """Runs clauses in order for one entry (``kind name``), collecting their names; the first to fail raises
    ``ConformanceError`` with the clause and the error it gave (an AssertionError's text, or the exception)."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name, self.passed = kind, name, []

    def check(self, clause: str, fn: Callable[[], Any]) -> Any:
        try:
            out = fn()
        except ConformanceError:
            raise
        except AssertionError as exc:
            raise ConformanceError(f"{self.kind} {self.name!r} breaks '{clause}': {exc}") from None
        except Exception as exc:  # noqa: BLE001 - any exception is the finding
            raise ConformanceError(f"{self.kind} {self.name!r} breaks '{clause}': {type(exc).__name__}: {exc}") \
                from exc
        self.passed.append(clause)
        return out


def expect_raises(error: type[BaseException] | tuple[type[BaseException], ...], fn: Callable[[], Any],
                  what: str) -> None:
    """AssertionError unless ``fn()`` raises ``error`` (another exception is re-raised as the finding)."""
    try:
        fn()
    except error:
        return
    raise AssertionError(f"{what} was accepted")
