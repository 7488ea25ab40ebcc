"""Every federated algorithm and protection, run through the public commands at a small scale, fingerprinted by Φ.

The cases pin behaviour across the move of every synchronous algorithm onto one party runtime (issue "One party
runtime"): ``tests/data/runtime_fingerprints.json`` was written by the code before that move. Regenerate it only
when a change is meant to change a result, and say which and why in the commit:

    python tests/_fingerprint_cases.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _texts import theme_texts, write_jsonl  # noqa: E402

FILE = Path(__file__).parent / "data" / "runtime_fingerprints.json"
# alpha=10: 50/K, the LDA family's default α as recorded (it became tomotopy's 0.1, measured, in session 43)
LDA = ["--dataset", "synthetic", "--parties", "3", "--scheme", "b", "-k", "5", "--iterations", "6", "--seed", "3",
       "--opt", "alpha=10"]
TEXTS = ["--parties", "3", "-k", "4", "--seed", "2"]
NMF = [*TEXTS, "--iterations", "4", "--opt", "local_epochs=2", "--opt", "fraction=0.67", "--opt", "batch=16"]
# wire=float64: the gradient messages as recorded on every machine below (float32 became the default in session 27;
# its runs are checked bit for bit against the in-process Sync-Opt in tests/test_gfedntm.py)
NTM = [*TEXTS, "--iterations", "2", "--opt", "batch=16", "--opt", "tolerance=0", "--opt", "wire=float64"]
# tau=0.2: the paper's τ, as recorded (the default became the τ that works at ε and V in session 40)
IFTM = [*TEXTS, "--iterations", "6", "--opt", "local_iterations=3", "--opt", "party_topics=2,3,4",
        "--opt", "alpha=0.1", "--opt", "tau=0.2"]

CASES: dict[str, list[str]] = {
    "train/centralized-lda": ["train", "--algorithm", "centralized-lda", *LDA],
    "train/local-lda": ["train", "--algorithm", "local-lda", *LDA],
    "train/sub-lda": ["train", "--algorithm", "sub-lda", *LDA, "--opt", "noise_multiplier=2"],
    "csfed-lda/none": ["simulate", "--algorithm", "csfed-lda", *LDA, "--protection", "none"],
    "csfed-lda/mask": ["simulate", "--algorithm", "csfed-lda", *LDA, "--protection", "mask"],
    "csfed-lda/paillier-iphe": ["simulate", "--algorithm", "csfed-lda", *LDA, "--protection", "paillier-iphe",
                                "--key-bits", "1024", "--delta", "0.1"],
    "csfed-lda/steps=2": ["simulate", "--algorithm", "csfed-lda", *LDA, "--opt", "steps=2"],
    "csfed-lda/dp": ["simulate", "--algorithm", "csfed-lda", *LDA, "--opt", "dp.noise_multiplier=2"],
    "fednmf/avg": ["simulate", "--algorithm", "fednmf", "@texts", *NMF, "--opt", "server_rule=avg"],
    "fednmf/adagrad": ["simulate", "--algorithm", "fednmf", "@texts", *NMF, "--opt", "server_rule=adagrad"],
    "fednmf/yogi": ["simulate", "--algorithm", "fednmf", "@texts", *NMF, "--opt", "server_rule=yogi"],
    "fednmf/adam+mi": ["simulate", "--algorithm", "fednmf", "@texts", *NMF, "--opt", "server_rule=adam",
                       "--opt", "mi_weight=0.1"],
    "fednmf/adam/mask": ["simulate", "--algorithm", "fednmf", "@texts", *NMF, "--opt", "server_rule=adam",
                         "--protection", "mask"],
    "iftm-lda/inf": ["simulate", "--algorithm", "iftm-lda", "@texts", *IFTM, "--opt", "epsilon=inf"],
    "iftm-lda/11": ["simulate", "--algorithm", "iftm-lda", "@texts", *IFTM, "--opt", "epsilon=11"],
    "iftm-sentencelda/11": ["simulate", "--algorithm", "iftm-sentencelda", "@texts", *IFTM, "--opt", "epsilon=11"],
    "gfedntm-prodlda/none": ["simulate", "--algorithm", "gfedntm-prodlda", "@texts", *NTM],
    "gfedntm-prodlda/mask": ["simulate", "--algorithm", "gfedntm-prodlda", "@texts", *NTM, "--protection", "mask"],
    "gfedntm-combinedtm/none": ["simulate", "--algorithm", "gfedntm-combinedtm", "@texts", *NTM],
    "gfedntm-combinedtm/mask": ["simulate", "--algorithm", "gfedntm-combinedtm", "@texts", *NTM,
                                "--protection", "mask"],
}
NEURAL = ("fednmf", "gfedntm")


def sha(phi: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(phi, dtype=np.float64).tobytes()).hexdigest()


def command(case: str, work: Path) -> list[str]:
    """The case's command line, writing its run into ``work/run`` (texts corpus written there when it needs one)."""
    args = list(CASES[case])
    if "@texts" in args:
        corpus = write_jsonl(work / "docs.jsonl", theme_texts(150, seed=4, sentence_length=4))
        at = args.index("@texts")
        args[at:at + 1] = ["--corpus", str(corpus)]
    return [*args, "--out", str(work / "run"), "--format", "json"]


def run_case(case: str, work: Path) -> list[str]:
    """Φ's fingerprint of every model the case's run wrote (one, or one per party for local-lda)."""
    from fedtopic.cli.main import main

    work.mkdir(parents=True, exist_ok=True)
    code = main(command(case, work))
    if code != 0:
        raise RuntimeError(f"{case}: exit {code}")
    models = sorted((work / "run").rglob("model.npz"))
    out = []
    for path in models:
        with np.load(path) as npz:
            out.append(sha(npz["phi"]))
    return out


def machine() -> str:
    """The label neural fingerprints are kept under: torch's CPU kernels, and the CPU's model name."""
    import torch

    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU")
    return f"{torch.backends.cpu.get_cpu_capability()}, {model}"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    recorded = json.loads(FILE.read_text()) if FILE.exists() else {}
    found: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in CASES:
            hashes = run_case(name, Path(tmp) / name.replace("/", "_"))
            if name.startswith(NEURAL):  # kept per machine: torch's float kernels differ between CPUs
                earlier = recorded.get(name, {})
                machines = dict(earlier.get("by_machine", {})) if isinstance(earlier, dict) else {}
                found[name] = {"by_machine": machines | {machine(): hashes}}
            else:
                found[name] = hashes
            print(name, hashes, file=sys.stderr)
    FILE.write_text(json.dumps(found, indent=1) + "\n")
