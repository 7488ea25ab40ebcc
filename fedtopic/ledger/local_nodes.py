"""Start and stop local chain nodes as separate processes: ``fedtopic chain up`` and anvil.

Used by the ledger tests (the same suite runs on every backend) and the ledger benchmark. Nodes
listen on 127.0.0.1 only and are stopped by their own PID.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from fedtopic.crypto.keys import read_hex_key
from fedtopic.ledger.errors import ChainUnreachable

REPO_ROOT = Path(__file__).resolve().parents[2]
ANVIL_BINARY = REPO_ROOT / "contracts" / "node_modules" / "@foundry-rs" / "anvil-linux-amd64" / "bin" / "anvil"
# anvil's first development account (public, from its well-known test mnemonic)
ANVIL_FAUCET_KEY = bytes.fromhex("ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
START_TIMEOUT_S = 60.0


def embedded_faucet_key() -> bytes:
    """Key of the embedded chain's first funded genesis account (eth-tester's test mnemonic)."""
    from eth_tester.backends.pyevm.main import (
        get_default_account_keys,  # py-evm: a heavy import, needed here only
    )

    return get_default_account_keys()[0].to_bytes()


@dataclass
class LocalNode:
    """A chain node running in a child process."""

    url: str
    process: subprocess.Popen
    faucet_key: bytes
    faucet_file: Path | None = None  # a chain without --dev: the file holding faucet_key (give it to deploy)

    @property
    def faucet_args(self) -> tuple[str, ...]:
        """``--faucet-key FILE`` for `consortium deploy` on this chain (nothing on a dev chain)."""
        return () if self.faucet_file is None else ("--faucet-key", str(self.faucet_file))

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM the node (by PID), wait, SIGKILL if it does not stop; return its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        return self.process.returncode


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that is free right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def start_chain_up(data_dir: Path | None = None, *, dev: bool = False, extra: tuple[str, ...] = (),
                   engine: str = "embedded", port: int = 0) -> LocalNode:
    """Run ``fedtopic chain up --port PORT [--data DIR] [--dev] [--engine anvil]`` and return once it prints its URL
    (anvil needs --dev, which is added; port 0: a free one)."""
    cmd = [sys.executable, "-m", "fedtopic.cli.main", "chain", "up", "--port", str(port), "--engine", engine, *extra]
    dev = dev or engine == "anvil"
    if data_dir is not None:
        cmd += ["--data", str(data_dir)]
    if dev:
        cmd.append("--dev")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_child_env())
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until the URL line (or EOF if it died)
    match = re.search(r"serving (http://\S+)", line)
    if match is None:
        proc.kill()
        err = proc.stderr.read() if proc.stderr else ""
        raise ChainUnreachable(f"fedtopic chain up did not start: {line.strip()} {err.strip()[-500:]}")
    faucet = re.search(r"faucet key in (\S+)\)", line)
    if engine == "anvil":
        key = ANVIL_FAUCET_KEY
    elif faucet is not None:  # a chain without --dev: its own faucet, which only its operator (here: us) holds
        key = read_hex_key(Path(faucet.group(1)), "faucet key file")
    else:
        key = embedded_faucet_key()
    return LocalNode(match.group(1), proc, key, None if faucet is None else Path(faucet.group(1)))


def start_anvil(binary: Path = ANVIL_BINARY) -> LocalNode:
    """Run anvil on a free 127.0.0.1 port and return once it answers JSON-RPC."""
    if not binary.exists():
        raise ChainUnreachable(f"anvil binary not found at {binary}: run `npm install` in contracts/")
    port = free_port()
    proc = subprocess.Popen([str(binary), "--host", "127.0.0.1", "--port", str(port), "--silent"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ChainUnreachable(f"anvil exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return LocalNode(f"http://127.0.0.1:{port}", proc, ANVIL_FAUCET_KEY)
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise ChainUnreachable(f"anvil did not listen on 127.0.0.1:{port} within {START_TIMEOUT_S:.0f} s")
