"""Compile the Solidity sources in ``contracts/src`` into the ABI/bytecode artifacts shipped as package data.

The compiler is solc-js from npm, pinned by ``contracts/package.json`` + lock file, run by py-solc-x
through ``contracts/solc-shim.js`` (solc-js' own ``solcjs`` script prints a non-JSON line, which
py-solc-x cannot parse). The artifacts in ``fedtopic/ledger/artifacts`` are committed; a test
recompiles and compares, so sources and artifacts cannot drift apart.

Regenerate with ``python -m fedtopic.ledger.compile`` from the repository root.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import solcx

from fedtopic.ledger.errors import CompileError

REPO_ROOT = Path(__file__).resolve().parents[2]
CONTRACTS_DIR = REPO_ROOT / "contracts"
ARTIFACTS_DIR = Path(__file__).resolve().parent / "artifacts"
CONTRACT_NAMES = ("ConsortiumRegistry", "PartyChannel")
EVM_VERSION = "cancun"  # supported by py-evm (eth-tester), anvil and current geth/Besu


def shim_path(contracts_dir: Path = CONTRACTS_DIR) -> Path:
    """The node shim py-solc-x runs as its ``solc``; raises CompileError if node or solc-js is missing."""
    shim = contracts_dir / "solc-shim.js"
    if shutil.which("node") is None:
        raise CompileError("node is not on PATH: the Solidity compiler is solc-js and needs node")
    if not (contracts_dir / "node_modules" / "solc").is_dir():
        raise CompileError(f"solc-js is not installed: run `npm ci` in {contracts_dir}")
    return shim


def standard_input(contracts_dir: Path = CONTRACTS_DIR) -> dict[str, Any]:
    """Solidity standard-JSON input for every ``contracts/src/*.sol`` (sorted, so the input is deterministic)."""
    sources = {
        f"src/{p.name}": {"content": p.read_text(encoding="utf-8")} for p in sorted((contracts_dir / "src").glob("*.sol"))
    }
    if not sources:
        raise CompileError(f"no Solidity sources in {contracts_dir / 'src'}")
    return {
        "language": "Solidity",
        "sources": sources,
        "settings": {
            "optimizer": {"enabled": True, "runs": 200},
            "evmVersion": EVM_VERSION,
            "outputSelection": {"*": {"*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"]}},
        },
    }


def compile_contracts(contracts_dir: Path = CONTRACTS_DIR) -> dict[str, dict[str, Any]]:
    """Compile and return ``{name: {"contractName", "abi", "bytecode", "deployedBytecode", "compiler", "evmVersion"}}``."""
    shim = shim_path(contracts_dir)
    try:
        version = str(solcx.wrapper.get_solc_version(shim, with_commit_hash=True))
        out = solcx.compile_standard(standard_input(contracts_dir), solc_binary=shim)
    except solcx.exceptions.SolcError as exc:
        raise CompileError(f"solc failed on {contracts_dir / 'src'}: {exc}") from None
    artifacts: dict[str, dict[str, Any]] = {}
    for contracts in out["contracts"].values():
        for name, c in contracts.items():
            if name in CONTRACT_NAMES:
                artifacts[name] = {
                    "contractName": name,
                    "compiler": f"solc-js {version}",
                    "evmVersion": EVM_VERSION,
                    "abi": c["abi"],
                    "bytecode": "0x" + c["evm"]["bytecode"]["object"],
                    "deployedBytecode": "0x" + c["evm"]["deployedBytecode"]["object"],
                }
    missing = set(CONTRACT_NAMES) - set(artifacts)
    if missing:
        raise CompileError(f"contracts missing from compiler output: {sorted(missing)}")
    return artifacts


def artifact_text(artifact: dict[str, Any]) -> str:
    """The exact file text of one artifact (stable key order and indentation)."""
    return json.dumps(artifact, indent=1, sort_keys=True) + "\n"


def write_artifacts(artifacts: dict[str, dict[str, Any]], out_dir: Path = ARTIFACTS_DIR) -> None:
    """Write one ``NAME.json`` per contract."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, art in artifacts.items():
        (out_dir / f"{name}.json").write_text(artifact_text(art), encoding="utf-8")


if __name__ == "__main__":
    write_artifacts(compile_contracts())
    print(f"wrote {', '.join(CONTRACT_NAMES)} to {ARTIFACTS_DIR}")
