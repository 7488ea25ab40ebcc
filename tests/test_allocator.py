"""``allocator.keep_freed_buffers``: a freed 8 MB buffer stays in the process (glibc), and a user's own
``MALLOC_*_`` settings win. Each case runs in a fresh interpreter: the setting is process-wide."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from fedtopic.allocator import is_glibc  # noqa: E402

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not is_glibc(), reason="glibc's malloc only")

SCRIPT = """
import os, sys
from fedtopic.allocator import keep_freed_buffers
print(keep_freed_buffers())
page = os.sysconf("SC_PAGE_SIZE")
rss = lambda: int(open("/proc/self/statm").read().split()[1]) * page
before = rss()
buf = b"\\x01" * (8 * 2**20)  # written, so resident
held = rss()
del buf
print(held - before, rss() - before)
"""


def _run(env: dict[str, str]) -> tuple[bool, int, int]:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | env).stdout
    applied, sizes = out.split("\n", 1)
    held, after = (int(x) for x in sizes.split())
    return applied == "True", held, after


def test_a_freed_buffer_stays_in_the_process() -> None:
    applied, held, after = _run({})
    assert applied and held >= 7 * 2**20
    assert after >= 7 * 2**20  # still resident after the free: the next round's buffer faults nothing in


def test_glibc_default_returns_it_and_the_users_settings_win() -> None:
    applied, held, after = _run({"MALLOC_TRIM_THRESHOLD_": str(128 * 1024)})
    assert not applied and held >= 7 * 2**20
    assert after < 2**20  # glibc's default: the 8 MB came from mmap and went back at the free
