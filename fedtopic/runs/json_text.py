"""Strict JSON text for files and stdout: numpy values as plain numbers, a non-finite float as ``null``.

Python's ``json`` writes ``NaN`` and ``Infinity`` by default, which is not JSON: jq, JavaScript and most
parsers refuse the whole document. A metric that does not apply (e.g. perplexity of an NMF model) is
computed as NaN and printed as ``null``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import PurePath
from typing import Any

import numpy as np


def strict(obj: Any) -> Any:
    """``obj`` with numpy scalars and arrays as Python values and every non-finite float as None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return strict(obj.tolist())
    if isinstance(obj, np.generic):
        return strict(obj.item())
    if isinstance(obj, PurePath):
        return str(obj)
    return obj


def dumps(obj: Any, *, indent: int | None = 2, default: Callable[[Any], Any] | None = None) -> str:
    """Strict JSON text of ``obj``; paths as strings, other objects through ``default`` (TypeError without)."""
    return json.dumps(strict(obj), indent=indent, allow_nan=False, default=default)
