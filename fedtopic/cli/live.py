"""A live table of every party's round, sweeps, staleness and quality while DAFed-LDA trains, under the elapsed time
and an ETA from the fastest party's sweeps (the stop rule: training ends when it reaches the last)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from rich.live import Live
from rich.table import Table

from fedtopic.algorithms.asynchronous import PartyLog, RoundReport
from fedtopic.cli.output import stderr_console


class PartyBoard:
    """Thread-safe callback target for ``run_party(on_round=...)`` that redraws a rich table."""

    def __init__(self, party_ids: Sequence[str], max_sweeps: int, *, title: str) -> None:
        self._rows = {pid: ("0", "0", "-", "-", "-", "-") for pid in party_ids}
        self._max = max_sweeps
        self._title = title
        self._started = time.monotonic()
        self._fastest = 0  # the most sweeps any party has done
        self._quality_name = "quality"
        self._lock = threading.Lock()
        self._terminal = stderr_console.is_terminal  # redirected: one plain line per round, not a last frame
        self._live = Live(self._table(), console=stderr_console, refresh_per_second=4, transient=False) \
            if self._terminal else None

    def _timing(self) -> str:
        """"12 s elapsed, ETA 30 s" (ETA from the fastest party's share of the sweeps)."""
        elapsed = time.monotonic() - self._started
        if self._fastest <= 0:
            return f"{elapsed:.0f} s elapsed"
        eta = elapsed * max(self._max - self._fastest, 0) / self._fastest
        return f"{elapsed:.0f} s elapsed, ETA {eta:.0f} s"

    def _table(self) -> Table:
        table = Table("party", "round", f"sweeps / {self._max}", "staleness (last round)", "mean staleness (all rounds so far)",
                      self._quality_name, "ε spent", title=f"{self._title} · {self._timing()}")
        for pid, row in self._rows.items():
            table.add_row(pid, *row)
        return table

    def on_round(self, party_id: str, report: RoundReport, log: PartyLog) -> None:
        last = " ".join(f"{q}:{s}" for q, s in sorted(report.staleness.items())) or "-"
        mean = sum(log.staleness) / len(log.staleness) if log.staleness else 0.0
        with self._lock:
            spent = "-" if report.epsilon is None else f"{report.epsilon:.4g}"
            quality = "-" if log.quality is None else f"{log.quality:.4g}"
            self._quality_name = log.quality_name or self._quality_name
            self._fastest = max(self._fastest, report.sweeps)
            self._rows[party_id] = (str(report.round), str(report.sweeps), last, f"{mean:.2f}", quality, spent)
            if self._live is not None:
                self._live.update(self._table())
            else:
                tail = "" if report.epsilon is None else f", ε spent {spent}"  # no DP: nothing to say
                said = "" if log.quality is None else f", {self._quality_name} {quality}"
                stderr_console.print(f"{party_id} round {report.round} ({report.sweeps}/{self._max} sweeps), "
                                     f"staleness {last} (mean over all its rounds so far {mean:.2f}){said}{tail}, "
                                     f"{self._timing()}",
                                     highlight=False, soft_wrap=True)

    def __enter__(self) -> "PartyBoard":
        if self._live is not None:
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)  # type: ignore[arg-type]
