"""One rule for counting rounds, shared by the CLI's progress, the nodes' status lines, summary.json and the
dashboard (issue 46, item 5).

A federated run of an algorithm trains ``Algorithm.rounds(spec)`` rounds, R. Some algorithms exchange before
they train: the LDA family's genesis counts, history round 0 (``Algorithm.setup_rounds(spec)``, 1 there, 0
elsewhere). History lines keep their exchange numbers; everything shown to a user counts training rounds 1..R,
and calls a setup exchange "setup". So csfed-lda with ``--iterations 30`` (one sweep a round) says "round 30/30"
and "30 rounds" after its setup exchange, wherever it is read.
"""

from __future__ import annotations


def training_round(history_round: int, setup: int) -> int:
    """The 1-based training round of a history line numbered ``history_round`` (0: a setup exchange)."""
    return max(int(history_round) - int(setup) + 1, 0)


def round_label(history_round: int, setup: int, total: int) -> str:
    """"round k/R", or "setup" for an exchange before the first training round."""
    k = training_round(history_round, setup)
    return "setup" if k == 0 else f"round {k}/{total}"
