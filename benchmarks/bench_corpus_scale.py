"""Corpora larger than memory: loading and training from a token store against tomotopy, wall time and peak memory.

    python benchmarks/bench_corpus_scale.py --tokens 30000000 [--vocabulary 20000] [--doc-length 50,400]
        [--topics 50] [--sweeps 2] [--repeats 3] [--json out.json]

A JSON lines corpus of ``--tokens`` tokens is generated once (cached in ``--cache``): documents drawn from an LDA
with 50 true topics over a Zipfian vocabulary of ``--vocabulary`` made-up lower-case words, lengths uniform in
``--doc-length``. Then each command runs as its own process, in turn, ``--repeats`` times, with its wall time and
the peak of the summed resident memory of its whole process tree (sampled every 20 ms from /proc, mapped file
pages included, shared pages divided among their sharers: PSS):

- ``store``: ``fedtopic data build`` (every core) then ``GibbsLDA`` (dense, one thread) on the opened store for
  ``--sweeps`` sweeps at ``--topics``; each step timed on its own too;
- ``store-1``: the same with one tokenising process;
- ``train``: ``fedtopic train --corpus STORE`` (the whole command: split, sweeps, evaluation, run folder; the
  store is built first, untimed, when neither ``store`` nor ``store-1`` is asked for);
- ``tomotopy``: read the JSON lines, ``add_doc(text.split())`` (tomotopy's cheapest load: no tokenizer, no stop
  words), ``train(sweeps, workers=1)``.

The vocabulary is the same for both (min_df 2, no max_df cut): the generated words are lower-case letters, so
``text.split()`` and our tokenizer agree on every token but stop words, which the made-up words avoid.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def make_corpus(path: Path, n_tokens: int, n_words: int, lengths: tuple[int, int], seed: int) -> None:
    """Write the JSON lines corpus (LDA with 50 topics, α 0.1, Zipfian topic-word weights over made-up words)."""
    from fedtopic.corpus.tokenize import default_stopwords

    rng = np.random.default_rng(seed)
    stop, vocab, seen = default_stopwords(), [], set()
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    while len(vocab) < n_words:
        w = "".join(rng.choice(letters, rng.integers(3, 10)))
        if w not in seen and w not in stop:
            seen.add(w)
            vocab.append(w)
    words = np.array(vocab)
    zipf = 1.0 / np.arange(1, n_words + 1) ** 1.05
    phi = np.stack([rng.permutation(zipf) for _ in range(50)])
    phi = rng.dirichlet(np.ones(n_words) * 0.05, 50) * 0.5 + phi / phi.sum(1, keepdims=True) * 0.5
    cum = np.cumsum(phi, axis=1)
    cum /= cum[:, -1:]
    tmp = path.with_suffix(".tmp")
    written = 0
    with open(tmp, "w") as fh:
        while written < n_tokens:  # a block of documents at a time: one searchsorted per topic
            sizes = []
            while written < n_tokens and sum(sizes) < 1_000_000:
                sizes.append(min(int(rng.integers(lengths[0], lengths[1] + 1)), n_tokens - written))
                written += sizes[-1]
            thetas = rng.dirichlet(np.full(50, 0.1), len(sizes))
            topics = np.concatenate([rng.choice(50, n, p=t) for n, t in zip(sizes, thetas)])
            u, ids = rng.random(len(topics)), np.empty(len(topics), dtype=np.int64)
            for k in range(50):
                at = topics == k
                ids[at] = np.minimum(np.searchsorted(cum[k], u[at]), n_words - 1)
            text = words[ids]
            start = 0
            for n in sizes:
                fh.write(json.dumps({"text": " ".join(text[start:start + n])}) + "\n")
                start += n
    os.replace(tmp, path)


def tree_rss(pid: int) -> int:
    """Summed proportional set size (bytes) of ``pid`` and its descendants, from /proc: pages shared by forked
    workers count once over all of them, not once in each."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
            for task in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{task}/children").read_text().split()]
        except (OSError, ValueError):
            continue
    return total


def measure(cmd: list[str]) -> tuple[float, int, str]:
    """(wall seconds, peak tree RSS in bytes, stdout) of one command."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss(proc.pid))
        time.sleep(0.02)
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err[-2000:]}")
    return wall, peak, out


_OURS = """
import sys, time, json
from fedtopic.corpus.readers import read_corpus
from fedtopic.models.lda import GibbsLDA
t0 = time.perf_counter()
corpus = read_corpus(sys.argv[1], min_df=2, max_df=1.0)
t1 = time.perf_counter()
GibbsLDA(int(sys.argv[2]), alpha=0.1, beta=0.01, sampler="dense", threads=1, seed=1).fit(corpus, int(sys.argv[3]))
t2 = time.perf_counter()
print(json.dumps({"open": t1 - t0, "sweeps": t2 - t1, "tokens": corpus.n_tokens, "words": corpus.n_words}))
"""

_TOMOTOPY = """
import sys, time, json
import tomotopy as tp
t0 = time.perf_counter()
mdl = tp.LDAModel(k=int(sys.argv[2]), alpha=0.1, eta=0.01, min_df=2, seed=1)
with open(sys.argv[1], encoding="utf-8") as fh:
    for line in fh:
        mdl.add_doc(json.loads(line)["text"].split())
t1 = time.perf_counter()
mdl.train(int(sys.argv[3]), workers=1)
t2 = time.perf_counter()
print(json.dumps({"load": t1 - t0, "sweeps": t2 - t1, "tokens": mdl.num_words, "words": len(mdl.used_vocabs)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=5_000_000)
    ap.add_argument("--vocabulary", type=int, default=20_000)
    ap.add_argument("--doc-length", default="50,400")
    ap.add_argument("--topics", type=int, default=50)
    ap.add_argument("--sweeps", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="store,store-1,train,tomotopy")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "fedtopic-bench-corpus")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    lo, hi = (int(x) for x in args.doc_length.split(","))
    args.cache.mkdir(parents=True, exist_ok=True)
    source = args.cache / f"corpus-{args.tokens}-{args.vocabulary}-{lo}-{hi}-{args.seed}.jsonl"
    if not source.exists():
        print(f"generating {source} …", file=sys.stderr)
        make_corpus(source, args.tokens, args.vocabulary, (lo, hi), args.seed)
    store = args.cache / (source.stem + ".store")
    fedtopic = [sys.executable, "-m", "fedtopic.cli.main"]
    k, sweeps = str(args.topics), str(args.sweeps)
    runs: dict[str, list[dict]] = {}
    only = args.only.split(",")
    if "train" in only and not {"store", "store-1"} & set(only) and not store.exists():
        print(f"building {store} for train (untimed) …", file=sys.stderr)
        subprocess.run([*fedtopic, "data", "build", str(source), "--out", str(store), "--min-df", "2",
                        "--max-df", "1.0", "--format", "json"], check=True, stdout=subprocess.DEVNULL)
    for rep in range(args.repeats):
        if "store" in only or "store-1" in only:
            for name, workers in (("store", []), ("store-1", ["--workers", "1"])):
                if name not in only:
                    continue
                b_wall, b_rss, _ = measure([*fedtopic, "data", "build", str(source), "--out", str(store), "--overwrite",
                                            "--min-df", "2", "--max-df", "1.0", *workers, "--format", "json"])
                t_wall, t_rss, out = measure([sys.executable, "-c", _OURS, str(store), k, sweeps])
                runs.setdefault(name, []).append({"build": b_wall, "build_rss": b_rss, "train_process": t_wall,
                                                  "train_rss": t_rss, "wall": b_wall + t_wall,
                                                  "rss": max(b_rss, t_rss), **json.loads(out)})
        if "train" in only:
            with tempfile.TemporaryDirectory() as run:
                wall, rss, _ = measure([*fedtopic, "train", "--corpus", str(store), "-k", k, "--iterations", sweeps,
                                        "--min-df", "2", "--max-df", "1.0", "--out", run, "--overwrite",
                                        "--format", "json"])
            runs.setdefault("train", []).append({"wall": wall, "rss": rss})
        if "tomotopy" in only:
            wall, rss, out = measure([sys.executable, "-c", _TOMOTOPY, str(source), k, sweeps])
            runs.setdefault("tomotopy", []).append({"wall": wall, "rss": rss, **json.loads(out)})
        print(f"repeat {rep + 1}: " + "; ".join(f"{n} {r[-1]['wall']:.1f} s {r[-1]['rss'] / 2**20:.0f} MB"
                                                 for n, r in runs.items()), file=sys.stderr)
    summary = {n: {key: statistics.median(r[key] for r in rs) for key in rs[0] if isinstance(rs[0][key], (int, float))}
               for n, rs in runs.items()}
    print(f"corpus: {source.name} ({source.stat().st_size / 2**20:.0f} MB of JSON lines)")
    for n, m in summary.items():
        extra = ", ".join(f"{key} {v:.2f}" for key, v in m.items() if key not in ("wall", "rss"))
        print(f"{n:10s} wall {m['wall']:7.2f} s  peak {m['rss'] / 2**20:7.0f} MB  ({extra})")
    if "tomotopy" in summary:
        for n in (x for x in summary if x != "tomotopy"):
            print(f"{n} / tomotopy: wall {summary[n]['wall'] / summary['tomotopy']['wall']:.2f}, "
                  f"memory {summary[n]['rss'] / summary['tomotopy']['rss']:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "runs": runs,
                                         "median": summary}, indent=2))


if __name__ == "__main__":
    main()
