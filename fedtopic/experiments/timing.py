"""Table 4 of the CSFed/DAFed paper: time per iteration by phase, per party, for every method (§8.4).

Data at the paper's scale by default: synthetic LDA, V = 13,155, K = 40,
20 parties × 300 documents × ~20 tokens (``TimingSettings``).

* centralized: sweeps of collapsed Gibbs on the pooled documents.
* CSFed (``none``, ``paillier-iphe`` δ = 0.5 %, ``paillier-packed``, ``mask``): the real protocol through a
  real aggregator child process, the parties driven in lock-step from one thread so each phase of each
  party is timed alone (as on its own machine): round 0 (genesis) is the warm-up, rounds 1..T are timed.
  Local Gibbs = the sweeps; encryption = encode + decode; communication = submit + fetch over HTTP (the
  last submit of a round includes the aggregator's combine). Per iteration = per round / steps.
  Multi-step rows of the Paillier schemes are derived from their single-step rounds (encryption and
  communication per round do not depend on the sweeps between them; marked ``derived``).
* HE (δ = 100 %, one count per ciphertext, the paper's HE): extrapolated from a measured sample of cells
  (encode + decode of ``he_sample_rows`` rows), communication from IPHE's measured bytes per second.
* DAFed: ``run_simulation`` over the embedded chain (channel encryption is inside communication).

Critical path = the slowest party's per-iteration total (parties run in parallel in reality); total CPU
= the sum over parties (plus the centralized trainer's own time for centralized).
"""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.algorithms.lda.options import LDAHyper
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.init import cp_from_consortia, party_ids
from fedtopic.corpus.pool import merge_corpora
from fedtopic.corpus.synthetic import generate_synthetic
from fedtopic.corpus.training_data import TrainingData
from fedtopic.corpus.types import Corpus
from fedtopic.crypto.paillier import ciphertext_bytes, generate_paillier_keys
from fedtopic.crypto.protect import IPHE, ProtectionContext, RoundInfo
from fedtopic.links import Channels, get_link
from fedtopic.models.lda import GibbsLDA
from fedtopic.models.prior import paper_alpha
from fedtopic.runs.history import latest_per_round, read_history
from fedtopic.simulation.sync_run import simulate_sync
from fedtopic.simulation.threads import run_simulation

PAPER = {"HE": 1385.69, "IPHE": 15.55, "IPHE multi-step": 9.07, "DAFed": 10.15}
"""Paper Table 4 (i7-6700), seconds per iteration."""


@dataclass(frozen=True)
class TimingSettings:
    """Scale of the experiment; the defaults are the paper's, ``quick()`` a smoke run."""

    parties: int = 20
    words: int = 13_155
    topics: int = 40
    docs_per_party: int = 300
    doc_length: int = 20
    multi_steps: int = 5
    timed_rounds: int = 1
    key_bits: int = 2048
    delta: float = 0.005
    he_sample_rows: int = 25
    dafed_rounds: int = 3
    seed: int = 0

    @staticmethod
    def quick() -> TimingSettings:
        return TimingSettings(parties=3, words=1_000, topics=10, docs_per_party=40, key_bits=1024, he_sample_rows=5,
                              dafed_rounds=2)


@dataclass(frozen=True)
class Row:
    """One line of Table 4, per iteration (seconds, bytes)."""

    method: str
    steps: int
    gibbs: float
    encryption: float
    communication: float
    critical_path: float
    total_cpu: float
    bytes_per_party: float
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def timing_corpora(s: TimingSettings) -> list[Corpus]:
    """Synthetic party corpora at the requested scale (every topic shared by all parties)."""
    return generate_synthetic(n_parties=s.parties, n_topics=s.topics, n_shared=s.topics, n_words=s.words,
                              docs_per_party=s.docs_per_party, doc_length=s.doc_length, seed=s.seed).parties


def _centralized(parts: list[Corpus], hyper: LDAHyper, sweeps: int) -> Row:
    model = GibbsLDA(hyper.n_topics, alpha=hyper.resolved_alpha, beta=hyper.beta, seed=hyper.seed)
    model.initialize(merge_corpora(parts))
    model.sweep()  # warm-up (JIT)
    t0 = time.perf_counter()
    for _ in range(sweeps):
        model.sweep()
    per = (time.perf_counter() - t0) / sweeps
    return Row("centralized", 1, per, 0.0, 0.0, per, per, 0.0)


def _rows_from_history(method: str, steps: int, histories: list[list[dict[str, Any]]], note: str = "") -> Row:
    """Per-iteration phases from every party's timed history rows (lists per party): computing is the Gibbs
    sweep, exchanging the encoding and decoding, waiting the requests (the aggregator's combine included)."""
    def per_party(key: Callable[[dict[str, Any]], float]) -> np.ndarray:
        return np.array([np.mean([key(r) for r in rows]) / steps for rows in histories])

    gibbs = per_party(lambda r: r["compute_s"])
    enc = per_party(lambda r: r["exchange_s"])
    comm = per_party(lambda r: r["wait_s"])
    total = gibbs + enc + comm
    nbytes = per_party(lambda r: r["bytes_up"] + r["bytes_down"])
    return Row(method, steps, float(gibbs.mean()), float(enc.mean()), float(comm.mean()), float(total.max()),
               float(total.sum()), float(nbytes.mean()), note)


def csfed_round_history(parts: list[Corpus], s: TimingSettings, protection: str, steps: int, work: Path,
                        progress: Callable[[str], None]) -> list[list[dict[str, Any]]]:
    """Run the real protocol (party runtime, real aggregator) for round 0 + ``timed_rounds`` rounds with one party
    computing at a time (``serialize_compute``), so every phase of every party is timed alone; each party's
    history rows of the timed rounds (round 0, the genesis with the key and word-ranking setup, left out)."""
    spec = get_algorithm("csfed-lda").spec(s.topics, steps * (s.timed_rounds + 1), s.seed,
                                           {"steps": steps, "alpha": paper_alpha(s.topics)})
    case = work / f"{protection}-s{steps}"
    train = merge_corpora(parts)
    data = TrainingData("timing", train, train.subset(np.arange(min(20, train.n_docs))), list(parts))
    progress(f"CSFed {protection} steps={steps}: setup, then {s.timed_rounds} timed rounds")
    simulate_sync(data, "csfed-lda", spec, case, protection=protection, delta=s.delta, key_bits=s.key_bits,
                  serialize_compute=True, say=lambda _: None)
    rows = [latest_per_round(read_history(case / "history" / f"{pid}.jsonl")) for pid in party_ids(len(parts))]
    return [r[1:1 + s.timed_rounds] for r in rows]


def _csfed(parts: list[Corpus], s: TimingSettings, protection: str, steps: int, work: Path,
           progress: Callable[[str], None]) -> Row:
    """One Table 4 row of CSFed ``protection``: per-iteration phases of the timed rounds."""
    return _rows_from_history(f"CSFed {protection}", steps, csfed_round_history(parts, s, protection, steps, work,
                                                                                progress))


def _derived(row: Row, steps: int, parties: int) -> Row:
    """``row`` (single-step) exchanging every ``steps`` sweeps: Gibbs per iteration stays, the rest is ÷ steps."""
    enc, comm = row.encryption / steps, row.communication / steps
    total = row.gibbs + enc + comm
    return replace(row, steps=steps, encryption=enc, communication=comm, critical_path=total,
                   total_cpu=total * parties, bytes_per_party=row.bytes_per_party / steps,
                   note="derived from the single-step rounds")


def _he_extrapolated(parts: list[Corpus], s: TimingSettings, iphe: Row, none: Row) -> Row:
    """HE, δ = 100 % unpacked: time encode + decode of a sample of rows, scale to V × K cells."""
    pair = generate_paillier_keys(s.key_bits)
    v, k = parts[0].n_words, s.topics
    ranking = np.arange(v, dtype=np.int64)
    delta = s.he_sample_rows / v
    ctx = ProtectionContext(session="he-sample", round=1, shape=(v, k), n_parties=s.parties, party_index=0,
                            max_value=max(1, parts[0].n_tokens), delta=delta, paillier_public=pair.public,
                            paillier_private=pair.private, word_ranking=ranking)
    counts = np.zeros((v, k), dtype=np.int64)
    meta = IPHE.session_meta(ctx)
    t0 = time.perf_counter()
    update = IPHE.encode_update(counts, ctx, meta)
    t1 = time.perf_counter()
    agg = IPHE.combine([update], RoundInfo("he-sample", 1, meta, ("p1",), tuple(f"p{i}" for i in range(1,
                                                                                                    s.parties + 1))))
    t2 = time.perf_counter()
    IPHE.decode_aggregate(agg, ctx, meta)
    t3 = time.perf_counter()
    cells = len(meta["rows"]) * k
    scale = v * k / cells
    enc = ((t1 - t0) + (t3 - t2)) * scale
    nbytes = 2.0 * v * k * ciphertext_bytes(pair.public)
    rate = iphe.bytes_per_party / max(iphe.communication, 1e-9)  # bytes per second IPHE achieved
    comm = nbytes / rate
    total = none.gibbs + enc + comm
    return Row("CSFed HE (δ=100 %, unpacked)", 1, none.gibbs, enc, comm, total, total * s.parties, nbytes,
               f"extrapolated from {cells} cells ({t1 - t0:.2f} s encode, {t3 - t2:.2f} s decode) x {scale:.0f}")


def _dafed(parts: list[Corpus], s: TimingSettings, steps: int) -> Row:
    ids = party_ids(len(parts))
    cp = cp_from_consortia([ids])
    spec = get_algorithm("dafed-lda").spec(s.topics, steps * s.dafed_rounds, s.seed,
                                           {"steps": steps, "alpha": paper_alpha(s.topics)})
    chain = get_link("chain", "async").connect(Channels(ids, cp, (parts[0].n_words, s.topics), seed=s.seed))
    sim = run_simulation(parts, spec, [chain.channel(pid) for pid in ids], cp, algorithm="dafed-lda")
    chain.close()
    per = [(log.compute_seconds / max(log.sweeps, 1), log.comm_seconds / max(log.sweeps, 1),
            (log.bytes_sent + log.bytes_received) / max(log.sweeps, 1)) for log in sim.logs]
    gibbs, comm, nbytes = (np.array(x) for x in zip(*per))
    total = gibbs + comm
    return Row("DAFed", steps, float(gibbs.mean()), 0.0, float(comm.mean()), float(total.max()), float(total.sum()),
               float(nbytes.mean()), "parties as threads sharing the cores; channel AES-GCM inside communication")


def run_timing(s: TimingSettings, progress: Callable[[str], None]) -> list[Row]:
    """Every row of Table 4 at the scale of ``s``."""
    parts = timing_corpora(s)
    hyper = LDAHyper(n_topics=s.topics, iterations=1, alpha=paper_alpha(s.topics), seed=s.seed)
    progress("centralized")
    rows = [_centralized(parts, hyper, sweeps=3)]
    with tempfile.TemporaryDirectory(prefix="timing-") as tmp:
        work = Path(tmp)
        measured: dict[tuple[str, int], Row] = {}
        for protection in ("none", "mask", "paillier-iphe", "paillier-packed"):
            for steps in (1, s.multi_steps):
                if protection.startswith("paillier") and steps > 1:
                    single = measured[(protection, 1)]
                    measured[(protection, steps)] = _derived(single, steps, s.parties)
                else:
                    measured[(protection, steps)] = _csfed(parts, s, protection, steps, work, progress)
        progress("HE (δ = 100 %, unpacked) sample")
        he = _he_extrapolated(parts, s, measured[("paillier-iphe", 1)], measured[("none", 1)])
    for protection in ("none", "paillier-iphe", "paillier-packed", "mask"):
        rows += [measured[(protection, 1)], measured[(protection, s.multi_steps)]]
    rows.insert(3, he)
    for steps in (1, s.multi_steps):
        progress(f"DAFed steps={steps} on the embedded chain")
        rows.append(_dafed(parts, s, steps))
    return rows


def table_lines(rows: list[Row]) -> list[str]:
    """Markdown table of ``rows``."""
    out = ["| method | steps | local Gibbs s | encryption s | communication s | critical path s | total CPU s | "
           "bytes/party | note |", "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        out.append(f"| {r.method} | {r.steps} | {r.gibbs:.4f} | {r.encryption:.3f} | {r.communication:.3f} | "
                   f"{r.critical_path:.3f} | {r.total_cpu:.2f} | {math.ceil(r.bytes_per_party):,} | {r.note} |")
    return out
