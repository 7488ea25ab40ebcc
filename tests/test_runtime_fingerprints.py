"""Behaviour pinned across the move onto one party runtime: every federated algorithm and protection, run through
``fedtopic simulate`` / ``train``, gives the bit-identical Φ recorded before the move (``_fingerprint_cases``)."""

from __future__ import annotations

import json

import pytest
from _fingerprint_cases import CASES, FILE, NEURAL, run_case

RECORDED = json.loads(FILE.read_text())


@pytest.mark.parametrize("case", list(CASES))
def test_phi_is_bit_identical_to_the_recorded_run(case, tmp_path):
    if case.startswith(NEURAL):
        pytest.importorskip("torch")
    assert run_case(case, tmp_path) == RECORDED[case]
