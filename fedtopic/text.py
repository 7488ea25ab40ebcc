"""Short human-readable lists for messages and logs."""

from __future__ import annotations

from collections.abc import Sequence


def some_names(names: Sequence[str], shown: int = 8) -> str:
    """The first ``shown`` names and how many more (a round of 1,000 parties waits for hundreds)."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")
