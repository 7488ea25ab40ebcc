"""A private vocabulary's release in a party's summary: its (ε, δ) beside the training's, and their total.

The vocabulary file of ``vocab align`` (private) records the release under "release" (``node.private_vocab``). A
node trained on it says so in summary.json: ``vocabulary_release`` (mechanism, ε, δ, unit, settings) and
``privacy_total``, the vocabulary's (ε, δ) plus the training's by basic composition (Dwork & Roth 2014, Thm. 3.16:
ε and δ add; the privacy unit of both is one document of this party). Basic composition is looser than composing
the two RDP curves, but holds whatever accountant the training used, and is what a reviewer can check by hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from fedtopic.errors import ConfigError

SHOWN = ("mechanism", "epsilon", "delta", "unit", "settings", "parties", "words")


def read_release(vocab_file: Path | None) -> dict[str, Any] | None:
    """The "release" a vocabulary file records (None: none, or no file); ConfigError if it is malformed."""
    if vocab_file is None:
        return None
    try:
        doc = json.loads(vocab_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None  # the vocabulary's own reader says what is wrong with the file
    release = doc.get("release") if isinstance(doc, dict) else None
    if release is None:
        return None
    ok = isinstance(release, dict) and all(
        isinstance(release.get(k), (int, float)) and math.isfinite(release[k]) and release[k] >= 0
        for k in ("epsilon", "delta"))
    if not ok:
        raise ConfigError(f"{vocab_file}: its \"release\" lacks a finite ε and δ; align the vocabulary again")
    return {k: release[k] for k in SHOWN if k in release}


def join_release(summary: dict[str, Any], release: dict[str, Any] | None, party_id: str) -> dict[str, Any]:
    """``summary`` with the vocabulary's release and this party's total (ε, δ); unchanged without a release."""
    if release is None:
        return summary
    training = (summary.get("privacy") or {}).get(party_id) or {}
    eps, delta = float(training.get("epsilon", 0.0)), float(training.get("delta", 0.0))
    total = {"epsilon": eps + release["epsilon"], "delta": delta + release["delta"],
             "composition": "basic (ε and δ add): the vocabulary's release plus the training's",
             "vocabulary": {"epsilon": release["epsilon"], "delta": release["delta"]},
             "training": {"epsilon": eps, "delta": delta} if training else None}
    return summary | {"vocabulary_release": release, "privacy_total": total}
