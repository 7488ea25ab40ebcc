"""Which aggregator session a synchronous node trains in: a new training run gets a new one, without wiping.

A run's sessions are named ``<base>-<channel>`` (``session_names``); a later run of the same consortium and
params is generation 2, 3, … (``<base>-r2-<channel>``). A node that resumes from its checkpoint uses the
generation the checkpoint names. A node without one looks at the newest generation on the aggregator:

- none yet, or it has ended (every member said it finished, or one abandoned it): the next generation;
- still running and this party has sent nothing there: join it (the others started first); with ``--fresh``,
  if it was opened with other params (an earlier run with another vocabulary or option), abandon it instead;
- still running and it holds this party's updates: this party lost its state. Without ``--fresh`` that is one
  line saying so (put the state back, or start a new run); with ``--fresh`` the party abandons that generation
  (every party still waiting in it stops with one line) and opens the next one, where the others follow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fedtopic.errors import TrainingError
from fedtopic.network.client import AggregatorClient
from fedtopic.network.schemas import SessionProgress

MAX_GENERATIONS = 10_000


def generation(base: str, number: int) -> str:
    """The base session id of run ``number`` (1: ``base`` itself)."""
    return base if number == 1 else f"{base}-r{number}"


def resolve_run_session(client_for: Callable[[str], AggregatorClient], base: str, probe: str, party: str,
                        params: Mapping[str, Any], *, fresh: bool, say: Callable[[str], None]) -> str:
    """The base session id this party's new run trains in (see the module docstring). ``client_for(session)``: a
    client of that session; ``probe``: the run's first channel, whose session tells a generation's state."""
    newest: tuple[int, SessionProgress] | None = None
    for number in range(1, MAX_GENERATIONS):  # a small probe per generation (/status holds every session's members)
        with client_for(f"{generation(base, number)}-{probe}") as client:
            found = client.progress()
        if found is None:
            break
        newest = (number, found)
    if newest is None:
        return base
    number, status = newest
    name = generation(base, number)
    if status.state != "running":
        return generation(base, number + 1)
    mine = status.you
    if mine.last_round is None and mine.ended is None:
        if not fresh:
            return name
        with client_for(f"{name}-{probe}") as client:
            theirs = client.session_info().params
        if all(theirs.get(k) == v for k, v in params.items()):
            return name
    elif not fresh:
        raise TrainingError(f"session {name}-{probe} already holds {party}'s updates up to round {mine.last_round}, "
                            f"but {party} has no checkpoint of that run (state moved or wiped?): put the state back to "
                            "resume, or start a new run with `node run --fresh` on every node")
    with client_for(f"{name}-{probe}") as client:  # rare (--fresh over a lost state): every channel of the run
        sessions = {s.session_id: s for s in client.status().sessions}
    for sid in sorted(s for s in sessions if s.startswith(f"{name}-") and sessions[s].state == "running"):
        with client_for(sid) as client:
            client.abandon()
    say(f"{party}: abandoned session {name}-* (--fresh); the new run trains in {generation(base, number + 1)}-*")
    return generation(base, number + 1)
