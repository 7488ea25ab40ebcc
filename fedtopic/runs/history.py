"""A party's per-round history: one JSON line per round, the same schema for every algorithm and mode.

Written by the party runtimes (``node run``: ``state/<party>/history.jsonl``; ``simulate``: the run folder's
``history/<party>.jsonl``), read by the plots, the dashboard and ``ledger``-free monitoring. Appending is the
only write: a restarted party appends after the lines it wrote before (a round it redoes after a crash appears
again, with ``resumed: true`` on the first line after the restart; readers keep the last line per round).

Schema ``fedtopic-history/1`` (docs/history.md), one object per line:

==================  ==========================================================================================
``schema``          "fedtopic-history/1"
``party``           the party's id
``algorithm``       the registry name
``round``           the round (step) number, from 0
``time``            wall-clock time when the round ended (Unix seconds, float)
``compute_s``       seconds of local work (training, encoding, decoding) in the round
``exchange_s``      seconds in requests to the aggregator or chain that did not wait for peers (async: publishing
                    and reading)
``wait_s``          seconds waiting for the round's aggregate (the slowest party) or for peers
``recoveries``      mask recovery messages the party sent in the round (peers that dropped out)
``bytes_up``        payload bytes this party sent in the round
``bytes_down``      payload bytes it received
``contributors``    synchronous: the parties in the round's aggregate (of its last exchange); else null
``staleness``       asynchronous: {peer: rounds behind} of the counts it trained on; else null
``epsilon``         differential privacy: ε spent so far; else null
``quality``         the algorithm's training-quality figure (see ``quality_name``), or null
``quality_name``    e.g. "loglik_per_token" (LDA family, iFTM), "loss" (FedNMF), "validation_loss" (gFedNTM)
``top_words``       every ``TOP_WORDS_EVERY``-th round (round % 10 == 0) and a synchronous party's last: the top 10
                    words per topic; else null
``top_weights``     with ``top_words``: each of those words' φ_kw (null for an algorithm without a distribution)
``prevalence``      with ``top_words``: each topic's share (float[K]), or null
``extra``           the algorithm's own per-round figures (an object)
``resumed``         true on the first line a party restored from its checkpoint writes
==================  ==========================================================================================
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

SCHEMA = "fedtopic-history/1"
TOP_WORDS_EVERY = 10
TOP_WORDS = 10  # words per topic in a line's ``top_words``
FILE_NAME = "history.jsonl"


@dataclass
class HistoryLine:
    """One round of one party (the module docstring gives every field's meaning)."""

    party: str
    algorithm: str
    round: int
    time: float
    compute_s: float = 0.0
    exchange_s: float = 0.0
    wait_s: float = 0.0
    bytes_up: int = 0
    bytes_down: int = 0
    recoveries: int = 0
    contributors: list[str] | None = None
    staleness: dict[str, int] | None = None
    epsilon: float | None = None
    quality: float | None = None
    quality_name: str | None = None
    top_words: list[list[str]] | None = None
    top_weights: list[list[float]] | None = None
    prevalence: list[float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    resumed: bool = False

    def as_dict(self) -> dict[str, Any]:
        """The fields by name, read as they are, not deep-copied (``asdict``): a line of a 1,000-party round lists
        1,000 contributors, and copying them cost 1.5 ms a line, per party and round."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_json(self) -> str:
        row = {"schema": SCHEMA} | self.as_dict()
        return json.dumps(_finite(row), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def top_words_due(round: int) -> bool:
    """Whether round ``round``'s line carries the top words (rounds 0, 10, 20, …)."""
    return round % TOP_WORDS_EVERY == 0


def top_words_of(ids: Any, vocab: Sequence[str]) -> list[list[str]]:
    """int[K, n] word ids per topic as the words themselves."""
    return [[vocab[int(i)] for i in row] for row in ids]


def _finite(value: Any) -> Any:
    """NaN and ±inf as null (strict JSON), recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return value if all(type(v) is str for v in value) else [_finite(v) for v in value]
    return value


class HistoryWriter:
    """Appends lines to ``path``; every line is flushed and fsynced before ``append`` returns. ``resumed``: the
    party was restored from a checkpoint, which the first line says."""

    def __init__(self, path: Path, *, resumed: bool = False) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._resumed = resumed
        self._torn = _ends_torn(path)  # a crash mid-line: end that line first, so the next one stands alone

    def append(self, line: HistoryLine) -> None:
        if self._resumed:
            line.resumed, self._resumed = True, False
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(("\n" if self._torn else "") + line.to_json() + "\n")
            self._torn = False
            fh.flush()
            os.fsync(fh.fileno())


def write_history_rows(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """``rows`` (``HistoryLine.as_dict()``s, e.g. carried back from another machine) appended to ``path``."""
    writer = HistoryWriter(path)
    for row in rows:
        writer.append(HistoryLine(**row))


def _ends_torn(path: Path) -> bool:
    """Whether ``path`` exists and its last byte is not a newline."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            if fh.tell() == 0:
                return False
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) != b"\n"
    except FileNotFoundError:
        return False


def read_history(path: Path) -> list[dict[str, Any]]:
    """Every complete line of ``path`` in order (a torn last line, from a crash mid-write, is skipped); lines of
    another schema are skipped too. An absent file is an empty history."""
    return list(_lines(path))


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    """The history's rows; a line a crash or a disk damaged (cut short, not UTF-8, zeros, not a row) is skipped,
    as a log's reader does: the rounds it described are redone or reported missing (``history_gaps``)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    for raw in data.splitlines():
        try:
            row = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(row, dict) and row.get("schema") == SCHEMA and isinstance(row.get("round"), int) \
                and not isinstance(row.get("round"), bool):
            yield row


def latest_per_round(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last line written for every round, in round order (a round redone after a restart counts once)."""
    by_round: dict[int, dict[str, Any]] = {}
    for row in rows:
        by_round[int(row["round"])] = row
    return [by_round[r] for r in sorted(by_round)]
