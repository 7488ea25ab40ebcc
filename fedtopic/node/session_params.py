"""What every party of a synchronous session must agree on before any update is used, as session params.

The first party to open a session fixes its params; every other party's open is refused by the aggregator
(``session_conflict``) or by the check against the launcher's (masked sessions) when its own differ: another
algorithm, K, iteration budget, seed, option, or vocabulary (size and the digest of the ordered words: the same
words in another order make updates incomparable).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Any

from fedtopic.algorithms.base import TrainSpec


def vocabulary_digest(words: Sequence[str]) -> str:
    """sha256 of the words joined by newlines, in their order."""
    return hashlib.sha256("\n".join(words).encode("utf-8")).hexdigest()


def session_params(algorithm: str, spec: TrainSpec, vocab: Sequence[str]) -> dict[str, Any]:
    """The params of every session of a run of ``algorithm`` with ``spec`` over ``vocab`` (strict JSON values:
    an infinite option is written as text)."""
    options = {f"opt_{k}": (v if not isinstance(v, float) or math.isfinite(v) else str(v))
               for k, v in spec.options.items() if v is not None}
    return {"algorithm": algorithm, "topics": spec.topics, "iterations": spec.iterations, "seed": spec.seed,
            "vocabulary": len(vocab), "vocab_sha256": vocabulary_digest(vocab), **options}
