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
    got, recorded = run_case(case, tmp_path), RECORDED[case]
    if isinstance(recorded, dict):  # torch's float kernels differ between CPUs (AVX2 / AVX-512, vendor): one per machine
        assert got in recorded["by_machine"].values(), (
            f"{case}: Φ matches none of the machines recorded ({', '.join(recorded['by_machine'])}); on a new kind "
            f"of CPU, record it from the commit before a change: python tests/_fingerprint_cases.py --write")
    else:
        assert got == recorded
