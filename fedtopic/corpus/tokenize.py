"""Turning raw text into tokens: lowercase, alphabetic, stop words removed, optional stemming.

The CSFed/DAFed paper (§8, "Dataset") removes stop words and applies word stemming;
we use the Porter stemmer of the ``snowballstemmer`` package for the latter.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import snowballstemmer

from fedtopic.errors import CorpusError

# Runs of letters in any script: no digits, no underscores, no punctuation.
WORD_RE = re.compile(r"[^\W\d_]+")
# a sentence ends at . ! ? (with closing quotes or brackets) before whitespace, or at a blank line or a line break
# followed by a capital or a bullet; abbreviations ("e.g. this") split too: SentenceLDA tolerates short sentences
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n\s*\n|\n(?=\s*[A-Z\-*•])")


@lru_cache(maxsize=1)
def default_stopwords() -> frozenset[str]:
    """The shipped English stop-word list (``stopwords.txt``, the Glasgow list, 318 words)."""
    text = resources.files("fedtopic.corpus").joinpath("stopwords.txt").read_text(encoding="utf-8")
    return frozenset(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    )


class Tokenizer:
    """Lowercase alphabetic tokens of at least ``min_length`` letters, minus stop words.

    Stop words and the length limit are applied to the surface form, before stemming,
    so that the stop list needs no stemmed variants. ``stopwords=None`` uses the shipped
    English list; pass ``frozenset()`` to keep every word.
    """

    def __init__(
        self,
        stem: bool = False,
        stopwords: frozenset[str] | None = None,
        min_length: int = 2,
    ) -> None:
        if min_length < 1:
            raise CorpusError(f"min_length must be at least 1, got {min_length}")
        self.stem = stem
        self.stopwords = default_stopwords() if stopwords is None else frozenset(stopwords)
        self.min_length = min_length
        self._stemmer = snowballstemmer.stemmer("porter") if stem else None
        self._stem_cache: dict[str, str] = {}

    def tokens(self, text: str) -> list[str]:
        """The tokens of one text, in order."""
        stop = self.stopwords
        n = self.min_length
        words = [w for w in WORD_RE.findall(text.lower()) if len(w) >= n and w not in stop]
        if self._stemmer is None:
            return words
        return [self._stem(w) for w in words]

    def sentence_tokens(self, text: str) -> tuple[list[str], list[int]]:
        """The tokens of one text, and the positions in them where its sentences start (empty sentences, those
        left without a token, have none). ``tokens(text)`` is the same token list."""
        tokens: list[str] = []
        starts: list[int] = []
        for sentence in _SENTENCE_END_RE.split(text):
            words = self.tokens(sentence)
            if words:
                starts.append(len(tokens))
                tokens += words
        return tokens, starts

    def _stem(self, word: str) -> str:
        stemmed = self._stem_cache.get(word)
        if stemmed is None:
            stemmed = self._stemmer.stemWord(word)  # type: ignore[union-attr]
            self._stem_cache[word] = stemmed
        return stemmed

    def config(self) -> dict[str, object]:
        """A JSON-able description, used to key caches of processed corpora."""
        return {
            "stem": self.stem,
            "min_length": self.min_length,
            "stopwords": sorted(self.stopwords),
        }

    def __repr__(self) -> str:
        return (
            f"Tokenizer(stem={self.stem}, stopwords=<{len(self.stopwords)} words>, "
            f"min_length={self.min_length})"
        )
