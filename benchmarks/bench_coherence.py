"""Our u_mass and c_v against gensim's CoherenceModel on the same reference texts and topics: wall time, peak
memory of the counting, and whether the values agree.

    python benchmarks/bench_coherence.py [--dataset 20newsgroups] [--topics 50,200,1000] [--repeats 3]
                                         [--skip-gensim-above 200] [--json out.json]

The reference is the dataset's training split as fedtopic reads it (its vocabulary's tokens, in document order);
gensim gets the same token lists and a Dictionary of them, as ``tests/test_coherence_measures.py`` gives them.
Topics: K rows of 10 distinct words drawn (seeded) from the 3,000 most frequent, so that pairs co-occur as a
model's top words do. Each measure runs ``--repeats`` times in this process, in turn with gensim's; the median is
reported. gensim's c_v keeps a [U, U] table of every top word pair, so from ``--skip-gensim-above`` topics only
ours runs. Memory is tracemalloc's peak of the call (numpy and Python allocations; numba's are none beyond the
outputs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedtopic.corpus.datasets import load_dataset  # noqa: E402
from fedtopic.eval.coherence_measures import cv_coherence, umass_coherence  # noqa: E402


def _timed(fn, repeats: int) -> tuple[float, float, np.ndarray]:
    """(median seconds, peak traced MB of the first call, the values)."""
    times, peak, out = [], 0.0, None
    for rep in range(repeats):
        if rep == 0:
            tracemalloc.start()
        started = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - started)
        if rep == 0:
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
    return statistics.median(times), peak, np.asarray(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="20newsgroups")
    ap.add_argument("--topics", default="50,200,1000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-gensim-above", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel

    reference = load_dataset(args.dataset, progress=False).train
    texts = [[reference.vocab[w] for w in reference.words[reference.doc_ptr[d]:reference.doc_ptr[d + 1]]]
             for d in range(reference.n_docs)]
    dictionary = Dictionary(texts)
    bows = [dictionary.doc2bow(t) for t in texts]
    frequent = np.argsort(-np.bincount(reference.words, minlength=reference.n_words), kind="stable")[:3000]
    print(f"{args.dataset}: {reference.n_docs:,} documents, {reference.n_tokens:,} tokens, V {reference.n_words:,}",
          file=sys.stderr)
    warm = reference.subset(np.arange(min(3, reference.n_docs)))
    umass_coherence(frequent[None, :10], warm), cv_coherence(frequent[None, :10], warm)  # numba's kernels loaded
    rows = []
    for k in (int(x) for x in args.topics.split(",")):
        rng = np.random.default_rng([args.seed, k])
        top = np.array([rng.choice(frequent, 10, replace=False) for _ in range(k)])
        words = [[reference.vocab[w] for w in row] for row in top]
        for measure, ours_fn in (("u_mass", umass_coherence), ("c_v", cv_coherence)):
            ours_s, ours_mb, ours = _timed(lambda: ours_fn(top, reference), args.repeats)
            row = {"topics": k, "measure": measure, "ours_s": ours_s, "ours_peak_mb": ours_mb}
            if k <= args.skip_gensim_above:
                source = {"texts": texts} if measure == "c_v" else {"corpus": bows}
                gensim_s, gensim_mb, theirs = _timed(lambda: CoherenceModel(
                    topics=words, dictionary=dictionary, coherence=measure, processes=1,
                    **source).get_coherence_per_topic(), args.repeats)
                row |= {"gensim_s": gensim_s, "gensim_peak_mb": gensim_mb, "speedup": gensim_s / ours_s,
                        "max_abs_difference": float(np.max(np.abs(ours - theirs)))}
            rows.append(row)
            print("  ".join(f"{key} {v:.4g}" if isinstance(v, float) else f"{key} {v}" for key, v in row.items()))
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows},
                                        indent=2))


if __name__ == "__main__":
    main()
