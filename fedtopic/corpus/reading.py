"""How a user's own documents are read into a corpus (``--corpus`` of ``train`` and ``simulate``): the tokenizer's
stop words, the vocabulary's document-frequency cut and the files' encoding, checked once, and the tokenizer
recorded with the model so that ``infer`` tokenises new documents the same way."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedtopic.corpus.readers import check_encoding
from fedtopic.corpus.tokenize import Tokenizer
from fedtopic.errors import CorpusError

STOPWORD_CHOICES = ("english", "none")


@dataclass(frozen=True)
class CorpusReading:
    """``min_df`` (documents a word must be in), ``max_df`` (the largest share of documents), ``stopwords``
    ("english": the shipped list; "none"; or a file of one word per line) and ``encoding``."""

    min_df: int = 2
    max_df: float = 0.5
    stopwords: str = "english"
    encoding: str = "utf-8"

    def is_default(self) -> bool:
        return self == CorpusReading()

    def stopword_set(self) -> frozenset[str] | None:
        """None for the shipped list, else the words (lower-cased)."""
        if self.stopwords == "english":
            return None
        if self.stopwords == "none":
            return frozenset()
        path = Path(self.stopwords)
        if not path.is_file():
            raise CorpusError(f"--stopwords takes english, none or a file of one word per line; {path} is no file")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise CorpusError(f"{path}: a stop-word file must be UTF-8") from None
        return frozenset(w.strip().lower() for w in text.splitlines() if w.strip() and not w.startswith("#"))

    def tokenizer_record(self) -> dict[str, Any]:
        """What the model records (``Tokenizer(**record)`` tokenises as this reading did)."""
        words = self.stopword_set()
        return {} if words is None else {"stopwords": sorted(words)}

    def options(self) -> dict[str, Any]:
        """``read_corpus``'s options; CorpusError on a bad value."""
        if self.min_df < 1:
            raise CorpusError(f"--min-df must be at least 1, got {self.min_df}")
        if not 0.0 < self.max_df <= 1.0:
            raise CorpusError(f"--max-df must be in (0, 1], got {self.max_df}")
        return {"min_df": self.min_df, "max_df": self.max_df, "encoding": check_encoding(self.encoding),
                "tokenizer": Tokenizer(stopwords=self.stopword_set())}
