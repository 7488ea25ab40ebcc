"""Strict JSON out of the CLI and run folders: NaN / ∞ (a metric that does not apply) become null."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fedtopic.cli.output import print_json
from fedtopic.runs.folder import write_json
from fedtopic.runs.json_text import dumps, strict


def _refuse(token: str) -> None:
    raise AssertionError(f"non-JSON constant {token} in the output")


def test_non_finite_values_anywhere_become_null(tmp_path, capsys):
    data = {"perplexity": float("nan"), "curve": [1.0, float("inf"), np.float64("-inf")], "n": np.int64(3),
            "arr": np.array([0.5, np.nan]), "nested": {"t": (np.float32(2.5), Path("/a/b"))}}
    expect = {"perplexity": None, "curve": [1.0, None, None], "n": 3, "arr": [0.5, None],
              "nested": {"t": [2.5, "/a/b"]}}
    print_json(data)
    assert json.loads(capsys.readouterr().out, parse_constant=_refuse) == expect
    write_json(tmp_path / "s.json", data)
    assert json.loads((tmp_path / "s.json").read_text(), parse_constant=_refuse) == expect


def test_unknown_objects_are_refused_in_files():
    with pytest.raises(TypeError):
        dumps({"x": object()})


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                    max_leaves=20))
def test_strict_text_always_parses_and_keeps_every_finite_value(value):
    text = dumps(value)
    assert json.loads(text, parse_constant=_refuse) == strict(value)
