"""`fedtopic data build`: tokenise a corpus once, in parallel, into a memory-mapped token store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from fedtopic.cli.corpus_options import (
    EncodingOption,
    MaxDfOption,
    MinDfOption,
    StopwordsOption,
    corpus_reading,
)
from fedtopic.cli.output import (
    FormatOption,
    OutputFormat,
    print_json,
    progress_bar,
    stdout_console,
)


def build(
    source: Annotated[Path, typer.Argument(help="your documents: a .jsonl file or a folder of .txt files")],
    out: Annotated[Path, typer.Option(help="the store folder to write (give it as --corpus to train, simulate, node run)")],
    workers: Annotated[Optional[int], typer.Option(min=1, help="tokenising processes (default: every core)")] = None,
    min_df: MinDfOption = 2,
    max_df: MaxDfOption = 0.5,
    stopwords: StopwordsOption = "english",
    encoding: EncodingOption = "utf-8",
    max_vocabulary: Annotated[Optional[int], typer.Option(min=1, help="keep the N words of highest document frequency")] = None,
    overwrite: Annotated[bool, typer.Option(help="replace an existing store at --out")] = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Tokenise SOURCE into a token store: 2 bytes a token (4 past 65,536 words), read memory-mapped, so a corpus
    larger than memory trains. A store built with --min-df 1 --max-df 1.0 serves every stricter reading (cut again
    from the document frequencies it keeps): build a party's store so for `vocab build|align` and `node run`."""
    from fedtopic.corpus.store_build import build_store

    reading = corpus_reading(min_df, max_df, stopwords, encoding)
    with progress_bar(transient=fmt is OutputFormat.json) as bar:
        task = bar.add_task("tokenising", total=None, info="")

        def on_progress(done: int, total: int) -> None:
            bar.update(task, completed=done >> 20, total=max(total >> 20, 1), info="MB")

        report = build_store(source, out, reading=reading, max_size=max_vocabulary, workers=workers,
                             overwrite=overwrite, progress=on_progress)
    facts = {"store": str(report.path), "documents": report.documents, "tokens": report.tokens,
             "vocabulary": report.vocabulary, "words_dtype": report.words_dtype,
             "bytes_on_disk": report.bytes_on_disk, "dropped_empty": report.dropped_empty}
    if fmt is OutputFormat.json:
        print_json(facts)
        return
    stdout_console.print(
        f"{report.path}: {report.documents:,} documents, {report.tokens:,} tokens over {report.vocabulary:,} words "
        f"({report.words_dtype}, {report.bytes_on_disk / max(report.tokens, 1):.2f} bytes a token on disk)"
        + (f"; {report.dropped_empty:,} documents left without a word were dropped" if report.dropped_empty else ""))
