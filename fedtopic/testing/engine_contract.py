"""An engine's contract (``fedtopic.engines.base``): every party's work runs once, the results come back in party
order as plain data, no more parties compute at once than the slots allow, and the first failure is a
``TrainingError`` naming the party."""

from __future__ import annotations

import threading
import time
from typing import Any

from fedtopic.engines.registry import get_engine
from fedtopic.errors import TrainingError
from fedtopic.testing.contract import Clauses

_LOCK = threading.Lock()
_BUSY = [0, 0]  # (computing now, the most at once) of the in-process work below


def _square(i: int, slots: Any) -> dict[str, int]:
    """A party's work: its index squared, as plain data, holding a slot while it "computes"."""
    with slots:
        with _LOCK:
            _BUSY[0] += 1
            _BUSY[1] = max(_BUSY[1], _BUSY[0])
        time.sleep(0.02)
        with _LOCK:
            _BUSY[0] -= 1
    return {"party": i, "value": i * i}


def _fail_second(i: int, slots: Any) -> int:
    if i == 1:
        raise ValueError("party work broke")
    return i


def _add(a: int, b: int) -> int:
    return a + b


def check_engine(name: str, *, parties: int = 4, address: str | None = None) -> list[str]:
    """The clauses engine ``name`` passed (``address``: its cluster, for engines that have one)."""
    engine = get_engine(name)
    clauses = Clauses("engine", name)
    names = [f"p{i + 1}" for i in range(parties)]

    def describes() -> None:
        info = engine.describe()
        assert info.get("name") == name and isinstance(info.get("summary"), str) and info["summary"], info
        assert isinstance(engine.in_process, bool), "in_process must be a bool"

    def results_in_order() -> None:
        _BUSY[:] = [0, 0]
        got = engine.run(names, _square, slots=1, address=address)
        assert got == [{"party": i, "value": i * i} for i in range(parties)], f"results {got!r}"
        if engine.in_process:
            assert _BUSY[1] == 1, f"{_BUSY[1]} parties computed at once with one slot"

    def failure_names_the_party() -> None:
        try:
            engine.run(names, _fail_second, slots=parties, address=address)
        except TrainingError as exc:
            assert "p2" in str(exc), f"the failure does not name the party: {exc}"
            return
        raise AssertionError("a party's failure did not raise TrainingError")

    def maps_in_order() -> None:
        tasks = [(i, 10) for i in range(parties)]
        assert engine.map(_add, tasks, address=address) == [i + 10 for i in range(parties)]

    def machines() -> None:
        here, others = engine.machines(address)
        assert here is None or isinstance(here, str), here
        assert isinstance(others, list) and all(isinstance(m, str) for m in others), others

    clauses.check("describes itself", describes)
    clauses.check("returns every party's result in party order, within its slots", results_in_order)
    clauses.check("a party's failure is a TrainingError naming it", failure_names_the_party)
    clauses.check("maps tasks in order", maps_in_order)
    def configured() -> None:
        import tempfile
        from pathlib import Path

        from fedtopic.engines.base import Engine

        with tempfile.TemporaryDirectory() as folder:
            run = engine.configured(Path(folder), verbose=False, say=lambda _: None)
            assert isinstance(run, Engine) and run.name == engine.name, run
            assert run.in_process == engine.in_process, "a configured engine changed where its parties run"

    clauses.check("says which machines it places parties on", machines)
    clauses.check("configures itself for one run's folder", configured)
    return clauses.passed
