"""The options that say how ``--corpus`` is read, shared by ``train`` and ``simulate`` (``corpus.reading``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

MinDfOption = Annotated[int, typer.Option(min=1, help="--corpus: keep words in at least this many documents")]
MaxDfOption = Annotated[float, typer.Option(min=0.0, max=1.0, help="--corpus: drop words in more than this share of the documents")]
StopwordsOption = Annotated[str, typer.Option(help="--corpus: english (the shipped list), none, or a UTF-8 file of one word per line; recorded with the model, so infer drops the same words")]
EncodingOption = Annotated[str, typer.Option(help="--corpus: the files' text encoding (utf-8, latin-1, cp1252, …)")]
HoldoutOption = Annotated[Optional[float], typer.Option(help="--corpus: the share of its documents held out (seeded) for the held-out figures; 0 trains on every document and scores the training documents (labelled so)", show_default="0.25")]  # noqa: UP007
TestCorpusOption = Annotated[Optional[Path], typer.Option(help="--corpus: train on every one of its documents and score the held-out figures on these (read as --corpus is, in its vocabulary)")]  # noqa: UP007


def corpus_reading(min_df: int, max_df: float, stopwords: str, encoding: str):  # -> fedtopic.corpus.reading.CorpusReading
    """The reading the options ask for."""
    from fedtopic.corpus.reading import CorpusReading

    return CorpusReading(min_df=min_df, max_df=max_df, stopwords=stopwords, encoding=encoding)
