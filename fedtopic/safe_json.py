"""Parse JSON from the network without trusting its shape: nesting is measured on the bytes first.

Python's C JSON parser recurses once per nesting level and guards itself only with the interpreter's recursion
limit, which importing web3 / py-evm raises to 100,000: a 200 KB body of ``[[[[…`` then overflows the native
stack and the server dies (SIGSEGV) before any check on the parsed value can run. So the depth is counted on
the raw bytes (string literals blanked, brackets summed with numpy, no recursion, linear time), and only a body
within ``MAX_DEPTH`` reaches ``json.loads``. Parsing is strict as well: no ``NaN`` / ``±Infinity`` literals and
no number that overflows a float, which are not JSON and which no reply may echo back.

Used by every server that reads JSON from a client: the aggregator's gate and ``chain up``'s JSON-RPC.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

MAX_DEPTH = 64
# A JSON string literal, unrolled so that long strings cost one pass: quote, runs of plain bytes, escapes.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPEN = np.zeros(256, dtype=np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


class UntrustedJSONError(ValueError):
    """The body is not strict JSON, or nests deeper than allowed; the message says which in one line."""


def nesting_depth(body: bytes) -> int:
    """The deepest bracket nesting of ``body`` outside string literals, counted without parsing (an unclosed
    string's brackets count too: such a body is refused either way)."""
    bare = np.frombuffer(_STRING.sub(b'""', body), dtype=np.uint8)
    if bare.size == 0:
        return 0
    return int(np.cumsum(_OPEN[bare], dtype=np.int64).max(initial=0))


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:32]} overflows a float")
    return value


def loads_untrusted(body: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """The value of ``body``, which must be UTF-8, strict JSON and nested at most ``max_depth`` deep."""
    raw = body.encode() if isinstance(body, str) else body
    depth = nesting_depth(raw)
    if depth > max_depth:
        raise UntrustedJSONError(f"JSON nested {depth} levels deep; at most {max_depth} are allowed")
    try:
        return json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise UntrustedJSONError(f"body is not strict JSON: {str(exc)[:200]}") from None
