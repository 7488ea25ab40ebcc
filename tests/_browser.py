"""Headless Chromium from Debian's packages driven by Playwright, and `fedtopic dashboard` / `simulate` child
processes for the browser tests. Where Chromium or Playwright is missing the tests are skipped with a loud
"NOT RUN" reason (pytest -ra lists it), never passed."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
REPO = Path(__file__).resolve().parent.parent
SHOTS = Path(os.environ.get("FEDTOPIC_SCREENSHOTS", "")) if os.environ.get("FEDTOPIC_SCREENSHOTS") else None


@contextmanager
def browser_pages(count: int, width: int = 1300, height: int = 900, extra_args: Sequence[str] = ()) -> Iterator[list]:
    """``count`` fresh pages (each in its own browser context) of one headless Chromium (``extra_args``: more
    command-line switches, e.g. a host-resolver rule); console errors and page errors are collected on each
    ``page.errors``."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("NOT RUN: playwright is not installed (scripts/test installs it from PyPI)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"NOT RUN: no Chromium at {CHROMIUM} (scripts/test installs Debian's chromium package; "
                    "it could not here)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[*ARGS, *extra_args])
        try:
            pages = []
            for _ in range(count):
                page = browser.new_context(viewport={"width": width, "height": height}).new_page()
                errors: list[str] = []
                page.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                page.errors = errors  # type: ignore[attr-defined]
                pages.append(page)
            yield pages
        finally:
            browser.close()


@contextmanager
def browser_page(width: int = 1300, height: int = 900) -> Iterator[object]:
    """One fresh page of headless Chromium (``browser_pages``)."""
    with browser_pages(1, width, height) as pages:
        yield pages[0]


def shot(page: object, path: Path, name: str) -> Path:
    """Screenshot the page to ``path/name.png`` (and to $FEDTOPIC_SCREENSHOTS, to look at)."""
    out = path / f"{name}.png"
    page.screenshot(path=str(out), full_page=True)  # type: ignore[attr-defined]
    if SHOTS is not None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]
    return out


def child_env() -> dict[str, str]:
    path = [str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def fedtopic(args: Sequence[str], log: Path) -> subprocess.Popen:
    """``fedtopic ARGS`` as a child process, stderr to ``log``, stdout piped."""
    return subprocess.Popen([sys.executable, "-m", "fedtopic.cli.main", *args], stdout=subprocess.PIPE,
                            stderr=open(log, "a"), text=True, env=child_env())


def stop(proc: subprocess.Popen) -> None:
    """Stop a child by its PID: SIGTERM, then SIGKILL after 10 s."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)


@contextmanager
def dashboard(path: Path, log: Path, *extra: str) -> Iterator[str]:
    """``fedtopic dashboard PATH --port 0``; yields its URL (read from its first stdout line)."""
    proc = fedtopic(["dashboard", str(path), "--port", "0", *extra], log)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    try:
        try:
            first = lines.get(timeout=60)
        except queue.Empty:
            raise AssertionError(f"the dashboard did not start: {log.read_text()[-2000:]}") from None
        assert "http://127.0.0.1:" in first, first + log.read_text()[-2000:]
        yield first.strip().split(": ", 1)[1]
    finally:
        stop(proc)


def wait_until(check, seconds: float, what: str, every: float = 0.2):
    """Poll ``check()`` until it returns something truthy (returned) or ``seconds`` pass (AssertionError)."""
    until = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > until:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(every)


def filled_text(page, selector: str, seconds: float = 15.0) -> str:
    """The inner text of ``selector`` once the page's scripts have filled it (they fetch after the first paint)."""
    page.wait_for_function("s => { const e = document.querySelector(s); return e && e.innerText.trim() !== ''; }",
                           arg=selector, timeout=seconds * 1000)
    return page.inner_text(selector)
