"""A training run's folder: summary.json, topics.json, model.npz, vocab.json and plots.

Every training command writes the same layout so that ``fedtopic topics`` and
``fedtopic infer`` (and any script) can read any run. summary.json always has
the stable keys of DESIGN.md (``SUMMARY_KEYS``) plus the algorithm's own.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.errors import ConfigError, ModelError
from fedtopic.models.prior import check_alpha
from fedtopic.runs.json_text import dumps
from fedtopic.temp_names import sibling_temp

SUMMARY_KEYS = (
    "algorithm",
    "dataset",
    "parties",
    "topics",
    "iterations",
    "seed",
    "perplexity",
    "npmi",
    "topic_diversity",
    "wall_seconds",
    "bytes_sent",
)


def stable_summary(*, algorithm: str, dataset: str, parties: int, topics: int, iterations: int, seed: int,
                   metrics: Mapping[str, Any], wall_seconds: float, bytes_sent: int) -> dict[str, Any]:
    """The ``SUMMARY_KEYS`` of a run whose model ``metrics`` scored (perplexity, npmi, topic_diversity), and how many
    documents were scored where the corpora were too large to score whole (``eval.report.scoring_sample``)."""
    return {"algorithm": algorithm, "dataset": dataset, "parties": parties, "topics": topics, "iterations": iterations,
            "seed": seed, "perplexity": metrics["perplexity"], "npmi": metrics["npmi"],
            "topic_diversity": metrics["topic_diversity"], "wall_seconds": wall_seconds, "bytes_sent": bytes_sent,
            **{k: int(metrics[k]) for k in SAMPLED_KEYS if k in metrics}}


SAMPLED_KEYS = ("held_out_documents_scored", "reference_documents")
"""Present in a summary when its figures come from a sample of the held-out (training) documents."""


@dataclass(frozen=True)
class TopicModelFile:
    """What inference needs from a run: Φ [K,V], α, β, the vocabulary and how text was tokenised."""

    phi: np.ndarray
    alpha: float | np.ndarray  # symmetric, or float64[K] learned (optim_interval)
    beta: float
    vocab: tuple[str, ...]
    tokenizer: dict[str, Any]
    algorithm: str = "lda"
    factors: np.ndarray | None = None  # NMF family: Wᵀ float64[K,V] unnormalised (θ of new text by NNLS)
    network: dict[str, np.ndarray] | None = None  # neural topic models: encoder weights and BatchNorm statistics
    embedding: dict[str, np.ndarray] | None = None  # embedding topics: topic centroids, θ's temperature, the embedder


def prepare_run_dir(path: Path, *, overwrite: bool = False) -> Path:
    """Create the run folder; refuse to clobber an earlier run unless asked."""
    path = Path(path)
    if (path / "summary.json").exists() and not overwrite:
        raise ConfigError(f"run folder {path} already holds a run (summary.json); pick another --out or pass --overwrite")
    path.mkdir(parents=True, exist_ok=True)
    return path


RUN_INFO = "run-info.json"


def write_run_info(run_dir: Path, info: dict[str, Any]) -> Path:
    """run-info.json at the start of a run: what it trains (``info``: algorithm, K, parties, protection, …) and
    which process runs it (``runs.process``), so a dashboard can tell a run that goes from one whose process died."""
    from fedtopic.runs.process import process_mark

    return write_json(Path(run_dir) / RUN_INFO, process_mark() | info)


def write_json(path: Path, data: Any, *, mode: int | None = None) -> Path:
    """Write pretty JSON atomically (temp file, then rename) so a crash never leaves half a file; ``mode``: the
    file's permissions, set before it takes the name (0o600: never readable by others, whatever the umask)."""
    tmp = sibling_temp(path)
    tmp.write_text(dumps(data) + "\n", encoding="utf-8")
    if mode is not None:
        tmp.chmod(mode)
    tmp.replace(path)
    return path


def write_summary(run_dir: Path, summary: dict[str, Any]) -> Path:
    """Write summary.json; every stable key must be present (None where it does not apply)."""
    missing = [k for k in SUMMARY_KEYS if k not in summary]
    if missing:
        raise ValueError(f"summary is missing stable keys: {missing}")
    ordered = {k: summary[k] for k in SUMMARY_KEYS} | {k: v for k, v in summary.items() if k not in SUMMARY_KEYS}
    return write_json(run_dir / "summary.json", ordered)


def add_to_summary(run_dir: Path, **fields: Any) -> None:
    """Add ``fields`` to a written summary.json (what the command knows beyond the algorithm: the held-out set)."""
    path = run_dir / "summary.json"
    if path.is_file():
        write_json(path, json.loads(path.read_text(encoding="utf-8")) | fields)


def write_topics(run_dir: Path, table: list[dict[str, Any]]) -> Path:
    """topics.json: one row per topic (``eval.topic_table``: topic, words, weights, prevalence, npmi)."""
    return write_json(run_dir / "topics.json", table)


def save_theta(run_dir: Path, theta: np.ndarray, train_names: tuple[str, ...], held_out_names: tuple[str, ...] = (),
               documents: Any = None) -> Path:
    """theta.npy (θ of the training documents, float64[D,K]) and theta-rows.json saying which document each row
    is; the held-out documents have no row and are listed apart (their θ comes from ``fedtopic infer``). With
    ``documents`` (the Corpus of those rows, in their order) also each row's length in tokens and
    term-frequency.npy (int64[V]: every word's count in them), what pyLDAvis needs beside Φ and θ
    (``fedtopic export pyldavis``)."""
    np.save(run_dir / "theta.npy", theta)
    names = list(train_names) if len(train_names) == theta.shape[0] else [str(i) for i in range(theta.shape[0])]
    rows: dict[str, Any] = {"rows": names, "held_out": list(held_out_names),
                            "note": "row i of theta.npy is document rows[i]; held-out documents have no row "
                                    "(fedtopic infer gives theirs)"}
    if documents is not None and documents.n_docs == theta.shape[0]:
        rows["lengths"] = [int(n) for n in np.diff(documents.doc_ptr)]
        np.save(run_dir / TERM_FREQUENCY, documents.word_counts())
    write_json(run_dir / "theta-rows.json", rows)
    return run_dir / "theta.npy"


TERM_FREQUENCY = "term-frequency.npy"


def save_topic_model(run_dir: Path, model: TopicModelFile) -> Path:
    """model.npz (Φ, α, β) and vocab.json (words and tokenizer options)."""
    extra = {} if model.factors is None else {"factors": model.factors}
    extra |= {f"net_{k}": v for k, v in (model.network or {}).items()}
    extra |= {f"emb_{k}": v for k, v in (model.embedding or {}).items()}
    np.savez_compressed(run_dir / "model.npz", phi=model.phi, alpha=model.alpha, beta=model.beta,
                        algorithm=np.str_(model.algorithm), **extra)
    write_json(run_dir / "vocab.json", {"words": list(model.vocab), "tokenizer": model.tokenizer})
    return run_dir / "model.npz"


def load_topic_model(run_dir: Path) -> TopicModelFile:
    """Read model.npz + vocab.json of a run folder, with one clear error if it is not one."""
    run_dir = Path(run_dir)
    model_path, vocab_path = run_dir / "model.npz", run_dir / "vocab.json"
    if not model_path.is_file() or not vocab_path.is_file():
        raise ModelError(f"{run_dir} is not a run folder (model.npz and vocab.json are needed)")
    try:
        with np.load(model_path, allow_pickle=False) as npz:
            phi, alpha, beta = npz["phi"], npz["alpha"], float(npz["beta"])
            alpha = float(alpha) if alpha.ndim == 0 else alpha.astype(np.float64)
            algorithm = str(npz["algorithm"]) if "algorithm" in npz.files else "lda"
            factors = npz["factors"] if "factors" in npz.files else None
            network = {k[4:]: npz[k] for k in npz.files if k.startswith("net_")} or None
            embedding = {k[4:]: npz[k] for k in npz.files if k.startswith("emb_")} or None
        meta = json.loads(vocab_path.read_text(encoding="utf-8"))
        vocab = tuple(meta["words"])
        tokenizer = dict(meta.get("tokenizer", {}))
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:
        raise ModelError(f"{run_dir}: model files are corrupt or truncated ({type(exc).__name__}: {exc})") from None
    if phi.ndim != 2 or phi.shape[1] != len(vocab):
        raise ModelError(f"{run_dir}: model.npz has Φ of shape {phi.shape} but vocab.json has {len(vocab)} words")
    if np.ndim(alpha):  # a learned α: one positive value per topic (a symmetric one may be 0: NMF and neural runs)
        alpha = check_alpha(alpha, phi.shape[0], f"{run_dir}: model.npz")
    if factors is not None and (factors.shape != phi.shape or not np.all(np.isfinite(factors)) or factors.min() < 0):
        raise ModelError(f"{run_dir}: model.npz has NMF factors of shape {factors.shape} for Φ of shape {phi.shape}, "
                         "or negative or non-finite ones")
    return TopicModelFile(phi=phi, alpha=alpha, beta=beta, vocab=vocab, tokenizer=tokenizer, algorithm=algorithm,
                          factors=factors, network=network, embedding=embedding)


def read_summary(run_dir: Path) -> dict[str, Any]:
    """summary.json of a run folder."""
    path = Path(run_dir) / "summary.json"
    if not path.is_file():
        raise ModelError(f"{run_dir} has no summary.json")
    return json.loads(path.read_text(encoding="utf-8"))
