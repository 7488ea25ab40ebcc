"""Progress of a synchronous consortium while it trains: rounds done / total, elapsed, ETA and the last quality
figure, from the parties' history lines. In a terminal a live bar on stderr; redirected, one plain line per round
(the round every party has finished), so a log shows progress as it happens and never a spinner's last frame."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from fedtopic.cli.output import progress_bar, stderr_console
from fedtopic.runs.history import HistoryLine
from fedtopic.runs.round_count import training_round


class RoundProgress:
    """Thread-safe target for every party's history lines (``on_line``); a context manager."""

    def __init__(self, title: str, total: int, parties: Sequence[str], *, setup: int = 0) -> None:
        """``total``: the run's training rounds; ``setup``: history rounds before the first (``runs.round_count``)."""
        self.title, self.total, self.parties, self.setup = title, max(total, 1), list(parties), setup
        self._done = dict.fromkeys(self.parties, 0)
        self._shown = 0
        self._quality = ""
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._first: float | None = None  # when every party had finished round 0 (setup excluded from the ETA)
        self._live = stderr_console.is_terminal
        self._bar = progress_bar() if self._live else None
        self._task: Any = None

    def __enter__(self) -> RoundProgress:
        if self._bar is not None:
            self._bar.__enter__()
            self._task = self._bar.add_task(self.title, total=self.total, info="")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)  # type: ignore[arg-type]

    def say(self, message: str) -> None:
        """A status message (the aggregator started, a party resumed or waits): one line, also when redirected."""
        stderr_console.print(message, highlight=False, soft_wrap=True)

    def on_line(self, party: str, line: HistoryLine) -> None:
        """A party finished a round."""
        with self._lock:
            self._done[party] = max(self._done.get(party, 0), training_round(line.round, self.setup))
            if line.quality is not None and party == self.parties[0]:
                self._quality = f"{line.quality_name} {line.quality:.4g}"
            everyone = min(self._done.values())
            if everyone <= self._shown:
                return
            self._shown = everyone
            if self._bar is not None:
                self.total = max(self.total, everyone)
                self._bar.update(self._task, completed=everyone, total=self.total, info=self._quality)
                return
            now = time.monotonic()
            elapsed = now - self._started
            if self._first is None:
                self._first = now
            rate = (now - self._first) / (everyone - 1) if everyone > 1 else elapsed
            eta = rate * max(self.total - everyone, 0)
            quality = f", {self._quality} ({self.parties[0]})" if self._quality else ""
            stderr_console.print(f"{self.title}: round {everyone}/{self.total}, {elapsed:.0f} s elapsed, "
                                 f"ETA {eta:.0f} s{quality}", highlight=False, soft_wrap=True)
