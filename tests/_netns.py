"""Linux network namespaces joined by veth pairs to one bridge: a machine per process, each with its own address,
for tests that must not trust loopback. Needs root and iproute2; ``available()`` says why not otherwise."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass


def _ip(*args: str, ns: str | None = None) -> None:
    cmd = ["ip", *args] if ns is None else ["ip", "netns", "exec", ns, "ip", *args]
    subprocess.run(cmd, check=True, capture_output=True, timeout=30)


def available() -> str | None:
    """None if namespaces can be made here, else the reason."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    probe = f"ftprobe{secrets.token_hex(3)}"
    try:
        _ip("netns", "add", probe)
    except (subprocess.CalledProcessError, OSError) as exc:
        return f"`ip netns add` failed: {getattr(exc, 'stderr', b'') or exc}"
    _ip("netns", "del", probe)
    return None


@dataclass(frozen=True)
class Machines:
    """Namespace and address of every named machine; the host side (this test process) is ``gateway``."""

    namespaces: dict[str, str]
    addresses: dict[str, str]
    gateway: str

    def command(self, machine: str, argv: Sequence[str]) -> list[str]:
        """``argv`` run inside ``machine``'s namespace."""
        return ["ip", "netns", "exec", self.namespaces[machine], *argv]


@contextmanager
def machines(names: Sequence[str]) -> Iterator[Machines]:
    """One namespace per name on a private /24, all on one bridge with the host at .1; removed on exit."""
    tag = secrets.token_hex(2)
    subnet = f"10.{77 + secrets.randbelow(40)}.{secrets.randbelow(250)}"
    bridge = f"ftbr{tag}"
    made: list[str] = []
    links: list[str] = []
    try:
        _ip("link", "add", bridge, "type", "bridge")
        _ip("addr", "add", f"{subnet}.1/24", "dev", bridge)
        _ip("link", "set", bridge, "up")
        spaces, addresses = {}, {}
        for i, name in enumerate(names):
            ns, outer, inner = f"ft{tag}{i}", f"ftv{tag}{i}", f"ftp{tag}{i}"
            _ip("netns", "add", ns)
            made.append(ns)
            _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
            links.append(outer)
            _ip("link", "set", inner, "netns", ns)
            _ip("link", "set", outer, "master", bridge)
            _ip("link", "set", outer, "up")
            address = f"{subnet}.{10 + i}"
            _ip("addr", "add", f"{address}/24", "dev", inner, ns=ns)
            _ip("link", "set", inner, "up", ns=ns)
            _ip("link", "set", "lo", "up", ns=ns)
            spaces[name], addresses[name] = ns, address
        yield Machines(spaces, addresses, f"{subnet}.1")
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        for link in links:
            subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=30)
        subprocess.run(["ip", "link", "del", bridge], capture_output=True, timeout=30)
