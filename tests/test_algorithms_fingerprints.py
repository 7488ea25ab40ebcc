"""Behaviour unchanged by the move onto the algorithm layer: Φ is bit-identical to the fingerprints of the old code.

``tests/data/phi_fingerprints.json`` was written by the code before the
algorithm layer (commit 9362d8c: ``train_centralized``/``train_local``,
``run_lockstep_simulation``/``run_virtual_simulation`` with ``LDAHyper``, and
``simulate_csfed`` through a real aggregator). Every run here reaches the same
algorithms through the registry; a changed draw anywhere changes a hash.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.init import cp_from_consortia, party_ids
from fedtopic.corpus.training_data import load_training_data

FINGERPRINTS = json.loads((Path(__file__).parent / "data" / "phi_fingerprints.json").read_text())
TOPICS, ITERATIONS, SEED = 6, 9, 4


def sha(phi: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(phi, dtype=np.float64).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def data():
    return load_training_data(dataset="synthetic", corpus=None, n_parties=3, scheme="b", seed=SEED, progress=False)


def spec(name: str, **options):
    """The recorded runs' spec: α = 50/K, the LDA family's default when they were recorded (0.1 since session 43)."""
    return get_algorithm(name).spec(TOPICS, ITERATIONS, SEED, {"alpha": 50.0 / TOPICS} | options)


def test_centralized_and_local(data):
    fitted = get_algorithm("centralized-lda").fit(data.parties, spec("centralized-lda"))
    assert [sha(f.model.phi) for f in fitted] == [FINGERPRINTS["centralized-lda"]]
    fitted = get_algorithm("local-lda").fit(data.parties, spec("local-lda"))
    assert [sha(f.model.phi) for f in fitted] == FINGERPRINTS["local-lda"]


@pytest.mark.parametrize("steps", [1, 2])
def test_csfed_lockstep(data, steps):
    from fedtopic.simulation.lockstep import run_lockstep_simulation

    sim = run_lockstep_simulation(data.parties, spec("csfed-lda", steps=steps), party_ids(3))
    assert {sha(p.phi()) for p in sim.parties} == {FINGERPRINTS[f"csfed-lda/lockstep/steps={steps}"]}


def test_dafed_virtual_clock(data):
    from fedtopic.simulation.virtual_async import run_virtual_simulation

    ids = party_ids(3)
    sim = run_virtual_simulation(data.parties, spec("dafed-lda"), ids, cp_from_consortia([ids]), max_delay=0.004)
    assert [sha(p.phi()) for p in sim.parties] == FINGERPRINTS["dafed-lda/virtual/steps=1"]
    sim = run_virtual_simulation(data.parties, spec("dafed-lda", steps=2), ids, cp_from_consortia([ids[:2], ids[2:]]),
                                 max_delay=0.004)
    assert [sha(p.phi()) for p in sim.parties] == FINGERPRINTS["dafed-lda/virtual/steps=2/cp"]


@pytest.mark.parametrize("protection", ["none", "mask"])
def test_csfed_through_the_real_aggregator(data, tmp_path, protection):
    from fedtopic.simulation.sync_run import simulate_sync

    simulate_sync(data, "csfed-lda", spec("csfed-lda"), tmp_path, protection=protection, say=lambda _: None)
    with np.load(tmp_path / "model.npz") as npz:
        assert sha(npz["phi"]) == FINGERPRINTS[f"csfed-lda/aggregator/{protection}"]
