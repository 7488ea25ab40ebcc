"""What a command interrupted by Ctrl-C kept: its driver notes it here, the CLI says it in the one line it prints.

The note lives in the process (a list, emptied when read): a command's driver writes what it saved before it
lets the interrupt go on, and ``cli.main`` reads it once the command has unwound.
"""

from __future__ import annotations

_KEPT: list[str] = []


def note_kept(what: str) -> None:
    """Record that the interrupted command kept ``what`` (a clause: "the model after sweep 40 in run/")."""
    _KEPT.append(what)


def take_kept() -> list[str]:
    """What was noted since the last call, oldest first."""
    out = list(_KEPT)
    _KEPT.clear()
    return out
