"""``safe_json``: the nesting counted on the bytes equals the parsed value's, for any JSON value and any string
contents (brackets, quotes and escapes inside strings); depth, NaN and overflow are refused before parsing."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtopic.safe_json import UntrustedJSONError, loads_untrusted, nesting_depth

_text = st.text(alphabet=st.sampled_from(list('ab[]{}"\\\n\u00e9\u2028 ,:')), max_size=12)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=30)


def _depth(value) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@given(_json, st.booleans())
def test_the_byte_count_equals_the_parsed_depth(value, ascii_only):
    body = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert nesting_depth(body) == _depth(value)
    assert loads_untrusted(body, max_depth=max(_depth(value), 1)) == value


def test_a_deep_body_is_refused_without_parsing():
    body = b'{"params": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(UntrustedJSONError, match="nested 100001 levels deep; at most 64"):
        loads_untrusted(body)
    assert loads_untrusted(b"[" * 64 + b"]" * 64) is not None


@pytest.mark.parametrize("body", [b'{"id": NaN}', b"[Infinity]", b"[-Infinity]", b"[1e400]", b'"\xff"', b"[1,",
                                  b'"unclosed [[['])
def test_what_is_not_strict_json_is_one_error(body):
    with pytest.raises(UntrustedJSONError) as err:
        loads_untrusted(body)
    assert "\n" not in str(err.value)
