"""The private vocabulary consensus against plain alignment: what the vocabulary costs a CSFed model, and the time.

    python benchmarks/bench_private_vocab.py [--dataset bbc-news] [--parties 3] [--topics 20] [--iterations 200]
        [--seeds 0 1 2] [--json out.json]

The dataset's raw training texts are split evenly among the parties (one .jsonl each); a mask consortium aligns
through a real aggregator process twice, every party a thread over HTTP: ``vocab align --method plain`` (each
party's words with ``--min-df 2 --max-df 0.5``, the union) and the private default (``--min-parties 2``, σ 1,
threshold 0.5). Each vocabulary then trains CSFed-LDA in lock-step (the consortium's exact model) on the parties'
documents, per seed, and is scored on the dataset's test texts by document completion:

- ``perplexity``: each model on its own vocabulary (what a user of either vocabulary sees);
- ``perplexity on shared words``: both models on the test tokens of the words both vocabularies hold, each Φ
  restricted to them and renormalised (the same tokens scored by both);
- coverage: the fraction of the test texts' tokens (after the tokenizer) that the vocabulary keeps.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.config import load_consortium, save_consortium
from fedtopic.consortium.init import init_consortium
from fedtopic.corpus.build import corpus_from_texts
from fedtopic.corpus.datasets import load_dataset
from fedtopic.corpus.readers import read_corpus
from fedtopic.corpus.tokenize import Tokenizer
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.eval.perplexity import completion_perplexity
from fedtopic.node.private_vocab import align_privately
from fedtopic.node.vocab_align import align_vocabulary
from fedtopic.simulation.aggregator_proc import AggregatorProcess
from fedtopic.simulation.lockstep import run_lockstep_simulation


def _consortium(root: Path, parties: int):
    init = init_consortium(parties, root, seed=11)
    cfg = load_consortium(init.config_path)
    cfg = cfg.model_copy(update={"aggregator": cfg.aggregator.model_copy(update={"protection": "mask"})})
    save_consortium(cfg, init.config_path)
    return init.config_path, load_consortium(init.config_path)


def _align(config: Path, cfg, files: dict[str, Path], url: str, private: bool) -> tuple[Vocabulary, float, dict]:
    started = time.perf_counter()
    with ThreadPoolExecutor(len(files)) as pool:
        if private:
            futures = [pool.submit(align_privately, cfg, config, pid, files[pid], url=url, timeout=600,
                                   say=lambda _: None) for pid in cfg.party_ids]
            results = [f.result() for f in futures]
            vocab, release = Vocabulary(results[0].words), results[0].release
            assert all(r.words == results[0].words for r in results)
        else:
            futures = [pool.submit(align_vocabulary, cfg, config, pid, files[pid], url=url, timeout=600,
                                   say=lambda _: None) for pid in cfg.party_ids]
            unions = [f.result() for f in futures]
            vocab, release = unions[0], {}
            assert all(u == vocab for u in unions)
    return vocab, time.perf_counter() - started, release


def _restricted(phi: np.ndarray, vocab: Vocabulary, shared: Vocabulary) -> np.ndarray:
    ids = [vocab.word_to_id[w] for w in shared.words]
    sub = phi[:, ids]
    return sub / sub.sum(axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="bbc-news")
    parser.add_argument("--parties", type=int, default=3)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--json", type=Path)
    a = parser.parse_args()
    data = load_dataset(a.dataset, progress=False)
    texts, test_texts = list(data.train.texts), list(data.test.texts)
    shares = np.array_split(np.random.default_rng(0).permutation(len(texts)), a.parties)
    tokenizer = Tokenizer()
    test_tokens = sum(len(tokenizer.sentence_tokens(t)[0]) for t in test_texts)
    out: dict = {"dataset": a.dataset, "parties": a.parties, "topics": a.topics, "iterations": a.iterations,
                 "seeds": a.seeds, "documents": len(texts), "test_documents": len(test_texts)}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        config, cfg = _consortium(root / "c", a.parties)
        files = {}
        for pid, idx in zip(cfg.party_ids, shares):
            files[pid] = root / f"{pid}.jsonl"
            files[pid].write_text("".join(json.dumps({"text": texts[i]}) + "\n" for i in idx), encoding="utf-8")
        with AggregatorProcess(config, root / "agg", root / "agg.log") as agg:
            vocabs = {name: _align(config, cfg, files, agg.url, name == "private") for name in ("plain", "private")}
        shared = Vocabulary(sorted(set(vocabs["plain"][0].words) & set(vocabs["private"][0].words)))
        test_shared = corpus_from_texts(test_texts, vocabulary=shared)
        algo = get_algorithm("csfed-lda")
        for name, (vocab, seconds, release) in vocabs.items():
            parts = [read_corpus(files[pid], vocabulary=vocab) for pid in cfg.party_ids]
            test = corpus_from_texts(test_texts, vocabulary=vocab)
            runs = []
            for seed in a.seeds:
                spec = algo.spec(a.topics, a.iterations, seed, {"alpha": 50.0 / a.topics},  # as RESULTS records
                                 where="options")
                phi = run_lockstep_simulation(parts, spec, list(cfg.party_ids)).parties[0].phi()
                alpha = float(spec.options["alpha"])
                runs.append({"seed": seed, "perplexity": completion_perplexity(phi, test, alpha, seed=seed),
                             "perplexity_shared": completion_perplexity(_restricted(phi, vocab, shared), test_shared,
                                                                        alpha, seed=seed)})
            out[name] = {"words": len(vocab), "align_seconds": seconds, "coverage": test.n_tokens / test_tokens,
                         "epsilon": release.get("epsilon"), "runs": runs,
                         "perplexity": statistics.median(r["perplexity"] for r in runs),
                         "perplexity_shared": statistics.median(r["perplexity_shared"] for r in runs)}
    out["shared_words"] = len(shared)
    p, q = out["plain"], out["private"]
    out["ratio"] = q["perplexity"] / p["perplexity"]
    out["ratio_shared"] = q["perplexity_shared"] / p["perplexity_shared"]
    print(f"{a.dataset}, {a.parties} parties, K {a.topics}, {a.iterations} iterations, seeds {a.seeds}")
    print(f"{'vocabulary':<10} {'words':>7} {'coverage':>9} {'align s':>8} {'ε':>6} {'perplexity':>11} "
          f"{'on shared':>10}")
    for name in ("plain", "private"):
        r = out[name]
        eps = "-" if r["epsilon"] is None else f"{r['epsilon']:.2f}"
        print(f"{name:<10} {r['words']:>7,} {r['coverage']:>9.3f} {r['align_seconds']:>8.1f} {eps:>6} "
              f"{r['perplexity']:>11.1f} {r['perplexity_shared']:>10.1f}")
    print(f"private / plain: perplexity {out['ratio']:.4f}, on the {len(shared):,} shared words "
          f"{out['ratio_shared']:.4f}")
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
