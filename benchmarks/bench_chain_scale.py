"""DAFed-LDA's chain at the paper's scale: publish, read, `ledger status`, `ledger audit` and restarts against length.

    python benchmarks/bench_chain_scale.py --engine embedded|anvil [--parties 20] [--rounds 1000]
        [--words 1000] [--topics 20] [--checkpoints 1 10 100 250 500 750 1000] [--json out.json]

A real consortium (`consortium init`, every party reading every other, `consortium deploy`) on a real
`fedtopic chain up` process (listening on a new port after each restart: the ledger commands get ``--rpc``) with a data directory (``--engine anvil``: the same command on anvil, state
persisted), P parties each publishing R rounds of sparse word-topic counts (V × K, Poisson(0.3) cells, sealed
and chunked as DAFed does). At each checkpoint round:

- one publish (median over the P parties of that round);
- a party's read of its peers' latest rounds (``read_latest``, median of 3);
- `fedtopic ledger status --format json` as a user runs it (a new process: wall time, Python start included);
- `fedtopic ledger audit` as a user runs it (incremental: the rounds since the previous checkpoint);
- a clean stop and a restart of the chain (seconds until it serves again);
- the chain's data on disk.

At the end: `ledger audit --full` and a kill -9 followed by a restart. The run on the other engine, with the same
arguments, is the side-by-side anchor (anvil is the "existing engine" path of issue 12).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedtopic.consortium.config import load_consortium  # noqa: E402
from fedtopic.consortium.init import key_file_path  # noqa: E402
from fedtopic.crypto.keys import load_party_keys  # noqa: E402
from fedtopic.ledger.channel import ChainChannel  # noqa: E402
from fedtopic.ledger.local_nodes import start_chain_up  # noqa: E402
from fedtopic.ledger.rpc import connect  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def fedtopic(*argv: str) -> tuple[float, str]:
    """Run the CLI as a user would; (wall seconds, stdout). Raises on a non-zero exit other than audit's 1."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "fedtopic.cli.main", *argv], capture_output=True, text=True, env=env,
                          timeout=3600)
    seconds = time.perf_counter() - t
    if done.returncode not in (0, 1):
        raise SystemExit(f"fedtopic {' '.join(argv)} exited {done.returncode}: {done.stderr.strip()[-400:]}")
    return seconds, done.stdout


def disk_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", choices=["embedded", "anvil"], default="embedded")
    ap.add_argument("--parties", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--words", type=int, default=1000)
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--checkpoints", type=int, nargs="+", default=[1, 10, 100, 250, 500, 750, 1000])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    checkpoints = sorted({c for c in args.checkpoints if 1 <= c <= args.rounds} | {args.rounds})
    with tempfile.TemporaryDirectory(prefix="chain-scale-") as tmp:
        root, data = Path(tmp) / "c", Path(tmp) / "chain"
        fedtopic("consortium", "init", "--parties", str(args.parties), "--out", str(root))
        config = root / "consortium.toml"
        node = start_chain_up(data, engine=args.engine)
        fedtopic("consortium", "deploy", str(config), "--rpc", node.url, *node.faucet_args)
        fedtopic("ledger", "audit", "--config", str(config), "--rpc", node.url)  # starts the incremental audit's state
        cfg = load_consortium(config)
        keys = {p: load_party_keys(key_file_path(root, p)) for p in cfg.party_ids}
        shape = (args.words, args.topics)

        def channels(url: str) -> dict[str, ChainChannel]:
            w3 = connect(url)
            return {p: ChainChannel(w3, cfg.chain.registry, k, shape=shape) for p, k in keys.items()}

        chans = channels(node.url)
        rng = np.random.default_rng(0)
        rows = []
        started = time.perf_counter()
        for r in range(1, args.rounds + 1):
            publish = []
            for ch in chans.values():
                counts = rng.poisson(0.3, size=shape).astype(np.int32)
                t = time.perf_counter()
                ch.publish(r, counts)
                publish.append(time.perf_counter() - t)
            if r not in checkpoints:
                continue
            reader, reads = chans[cfg.party_ids[0]], []
            for _ in range(3):
                t = time.perf_counter()
                got = reader.read_latest()
                reads.append(time.perf_counter() - t)
            assert len(got) == args.parties - 1 and all(s.round == r for s in got)
            status_s, out = fedtopic("ledger", "status", "--config", str(config), "--rpc", node.url, "--format",
                                     "json")
            assert all(c["latest_round"] == r for c in json.loads(out)["channels"])
            audit_s, out = fedtopic("ledger", "audit", "--config", str(config), "--rpc", node.url, "--format", "json")
            audit = json.loads(out)
            assert audit["failed"] == 0 and audit["mode"] == "incremental"
            blocks = connect(node.url).eth.block_number
            assert node.stop() == 0
            t = time.perf_counter()
            node = start_chain_up(data, engine=args.engine)
            restart_s = time.perf_counter() - t
            chans = channels(node.url)
            row = {"round": r, "blocks": blocks, "publish_s": statistics.median(publish),
                   "read_latest_s": statistics.median(reads), "status_s": status_s, "audit_s": audit_s,
                   "audited_rounds": len(audit["rounds"]), "restart_s": restart_s, "disk_mb": disk_mb(data),
                   "elapsed_s": time.perf_counter() - started}
            rows.append(row)
            print(json.dumps(row), flush=True)
        full_s, out = fedtopic("ledger", "audit", "--config", str(config), "--rpc", node.url, "--full", "--format",
                               "json")
        full = json.loads(out)
        assert full["failed"] == 0 and full["rounds_verified"] == args.parties * args.rounds
        os.kill(node.process.pid, signal.SIGKILL)
        node.process.wait(timeout=60)
        t = time.perf_counter()
        node = start_chain_up(data, engine=args.engine)
        kill_restart_s = time.perf_counter() - t
        assert connect(node.url).eth.block_number >= rows[-1]["blocks"] or args.engine == "anvil"
        blocks_after_kill = connect(node.url).eth.block_number
        node.stop()
    out_json = {"engine": args.engine, "parties": args.parties, "rounds": args.rounds, "shape": list(shape),
                "rows": rows, "audit_full_s": full_s, "kill_restart_s": kill_restart_s,
                "blocks_after_kill": blocks_after_kill}
    print(json.dumps({k: v for k, v in out_json.items() if k != "rows"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out_json, indent=2))


if __name__ == "__main__":
    main()
