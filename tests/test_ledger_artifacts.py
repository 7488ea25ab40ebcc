"""The committed contract artifacts are exactly what the pinned compiler makes of the committed sources."""

from __future__ import annotations

import pytest

from fedtopic.ledger import compile as ledger_compile
from fedtopic.ledger.contracts import CHANNEL, REGISTRY, load_artifact

needs_solc = pytest.mark.skipif(
    not (ledger_compile.CONTRACTS_DIR / "node_modules" / "solc").is_dir(),
    reason="solc-js not installed: run `npm ci` in contracts/ (scripts/test does)",
)


@needs_solc
def test_recompiling_sources_gives_the_committed_artifacts() -> None:
    fresh = ledger_compile.compile_contracts()
    for name, art in fresh.items():
        committed = (ledger_compile.ARTIFACTS_DIR / f"{name}.json").read_text(encoding="utf-8")
        assert ledger_compile.artifact_text(art) == committed, f"{name}.json drifted: run python -m fedtopic.ledger.compile"


@needs_solc
def test_compiler_is_the_pinned_solc_js() -> None:
    import json

    pinned = json.loads((ledger_compile.CONTRACTS_DIR / "package.json").read_text())["dependencies"]["solc"]
    assert load_artifact(REGISTRY)["compiler"].startswith(f"solc-js {pinned}+")
    assert f"pragma solidity {pinned};" in (ledger_compile.CONTRACTS_DIR / "src" / "PartyChannel.sol").read_text()


def test_artifacts_have_abi_and_bytecode() -> None:
    for name in (REGISTRY, CHANNEL):
        art = load_artifact(name)
        assert art["bytecode"].startswith("0x60") and len(art["bytecode"]) > 1000
        assert any(e.get("name") == "publish" for e in art["abi"]) == (name == CHANNEL)
