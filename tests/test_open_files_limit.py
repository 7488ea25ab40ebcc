"""A simulation or an aggregator holds a connection per party: the open-files limit is raised to what the system
allows, and a simulation that would still pass it stops with one line before it starts anything."""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys

from fedtopic.ledger.local_nodes import REPO_ROOT


def _run(code: str, soft: int, hard: int) -> subprocess.CompletedProcess:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return subprocess.run([sys.executable, "-c", code], preexec_fn=limit, capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=300)


def test_the_soft_limit_is_raised_to_the_hard_one():
    code = ("import resource; from fedtopic.runs.process import raise_open_files_limit as r; "
            "print(r(), *resource.getrlimit(resource.RLIMIT_NOFILE))")
    out = _run(code, 64, 256)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["256", "256", "256"]
    same = _run(code, 128, 128)
    assert same.stdout.split() == ["128", "128", "128"]


def test_a_simulation_too_large_for_the_limit_stops_in_one_line(tmp_path):
    words = [f"{a}{b}word" for a in "abcdefghij" for b in "abcdefghij"]
    rng = random.Random(0)
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps({"text": " ".join(rng.choice(words) for _ in range(30))}) + "\n"
                              for _ in range(300)))
    code = ("import sys; from fedtopic.cli.main import main; sys.exit(main(['simulate', '--algorithm', 'csfed-lda', "
            f"'--corpus', {str(corpus)!r}, '--parties', '100', '--topics', '3', '--iterations', '1', "
            f"'--out', {str(tmp_path / 'run')!r}]))")
    out = _run(code, 128, 128)
    errors = [line for line in out.stderr.splitlines() if line.strip()]
    assert out.returncode == 2, out.stderr[-2000:]
    assert len(errors) == 1 and "100 parties in one process need about" in errors[0] and "`ulimit -n`" in errors[0]
    assert not (tmp_path / "run" / "aggregator.log").exists()  # refused before an aggregator started
