"""`fedtopic infer RUN`: θ of new documents under a trained model ("model a new user", paper §5.1)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.table import Table

from fedtopic.cli.output import FormatOption, OutputFormat, print_json, stdout_console
from fedtopic.corpus.build import corpus_from_tokens
from fedtopic.corpus.readers import read_named_texts
from fedtopic.corpus.tokenize import Tokenizer
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.errors import CorpusError
from fedtopic.eval.topics import top_words
from fedtopic.models.foldin import fold_in
from fedtopic.models.nnls import counts_matrix, nnls_weights
from fedtopic.runs.folder import load_topic_model


def _read_texts(text: list[str], file: list[Path], lines: bool = False) -> list[tuple[str, str]]:
    """(name, text) of every document: each --text, each file's (or, with ``lines``, each non-empty line of a
    text file, named FILE:LINE)."""
    docs = [(f"text[{i}]", t) for i, t in enumerate(text)]
    for path in file:
        try:
            if lines and path.is_file() and path.suffix != ".jsonl":
                rows = path.read_text(encoding="utf-8").splitlines()
                docs.extend((f"{path.name}:{i}", row) for i, row in enumerate(rows, start=1) if row.strip())
            else:
                docs.extend(read_named_texts(path))
        except OSError as exc:
            raise CorpusError(f"{path}: cannot read it ({exc.strerror})") from None
        except UnicodeDecodeError as exc:
            raise CorpusError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    if not docs:
        raise CorpusError("give at least one --text or --file")
    return docs


def _write_theta_csv(path: Path, names: list[str], theta: np.ndarray) -> None:
    """θ (float[D, K]) with each row's document id, as CSV (header: document, topic_0, …)."""
    try:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["document", *(f"topic_{k}" for k in range(theta.shape[1]))])
            writer.writerows([name, *(f"{v:.6g}" for v in row)] for name, row in zip(names, theta))
    except OSError as exc:
        raise CorpusError(f"cannot write {path}: {exc.strerror}") from None


def infer(
    run: Annotated[Path, typer.Argument(help="a run folder written by train/simulate/demo")],
    text: Annotated[list[str], typer.Option("--text", help="a document as a string (repeatable)")] = [],  # noqa: B006
    file: Annotated[list[Path], typer.Option("--file", help="a UTF-8 text file, a folder of .txt files or a .jsonl "
                                             "with \"text\" and \"id\" per line (repeatable)")] = [],  # noqa: B006
    out: Annotated[Path | None, typer.Option("--out", help="also write θ as CSV: one row per document, its id "
                                             "first, then one column per topic")] = None,
    lines: Annotated[bool, typer.Option("--lines", help="each non-empty line of a --file text file is one "
                                        "document (named FILE:LINE), not the whole file")] = False,
    iterations: Annotated[int, typer.Option(min=2, help="fold-in Gibbs sweeps")] = 100,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    top: Annotated[int, typer.Option(min=1, help="topics to show per document")] = 3,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Estimate the topic mixture θ of new documents with the topics fixed (Gibbs fold-in; NMF: least squares)."""
    model = load_topic_model(run)
    docs = _read_texts(text, file, lines)
    tokenizer = Tokenizer(**model.tokenizer)
    vocab = Vocabulary(model.vocab)
    encoded = corpus_from_tokens([tokenizer.tokens(t) for _, t in docs], vocab, drop_empty=False)
    if model.factors is not None:  # NMF: non-negative least squares with W fixed
        theta = nnls_weights(counts_matrix(encoded), model.factors.T)
    elif model.network is not None:  # neural: the posterior mean
        from fedtopic.neural.ntm_model import theta_from_network

        theta = theta_from_network(model.network, encoded)
    elif model.embedding is not None:  # embedding topics: soft membership of the topic centroids
        from fedtopic.algorithms.embedding_topics.inference import embedding_theta

        theta = embedding_theta(model.embedding, encoded, [t for _, t in docs])
    else:
        theta = fold_in(model.phi, encoded.words, encoded.doc_ptr, model.alpha, iterations=iterations, seed=seed)
    known = encoded.doc_lengths()
    labels = top_words(model.phi, model.vocab, 6)
    results = []
    for (name, _), row, n in zip(docs, theta, known):
        order = np.argsort(-row)[:top]
        results.append(
            {
                "document": name,
                "known_tokens": int(n),
                "theta": [round(float(v), 6) for v in row],
                "top_topics": [{"topic": int(k), "weight": float(row[k]), "words": labels[k]} for k in order],
            }
        )
    if out is not None:
        _write_theta_csv(out, [name for name, _ in docs], theta)
    if fmt is OutputFormat.json:
        print_json(results)
        return
    table = Table("document", "known tokens", "top topics (weight: words)")
    for r in results:
        note = "" if r["known_tokens"] else " (no known word: θ is the prior)" if model.factors is None else \
            " (no known word: zero weights)"
        tops = "\n".join(f"{t['topic']} {t['weight']:.2f}: {' '.join(t['words'])}" for t in r["top_topics"])
        table.add_row(r["document"], f"{r['known_tokens']}{note}", tops)
    stdout_console.print(table)
