"""A frozen vocabulary (word ↔ id) chosen by document frequency."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from types import MappingProxyType

import numpy as np

from fedtopic.errors import CorpusError

_FORMAT = "fedtopic.vocabulary"
_VERSION = 1


class Vocabulary:
    """An ordered tuple of distinct words; word ``words[i]`` has id ``i``.

    Built vocabularies are ordered by descending document frequency, ties broken
    alphabetically, so id 0 is the most widespread word.
    """

    __slots__ = ("_words", "_index")

    def __init__(self, words: Iterable[str]) -> None:
        words = tuple(words)
        for w in words:
            if not isinstance(w, str) or not w:
                raise CorpusError(f"vocabulary words must be non-empty strings, got {w!r}")
        index = {w: i for i, w in enumerate(words)}
        if len(index) != len(words):
            dup = next(w for w, c in Counter(words).items() if c > 1)
            raise CorpusError(f"vocabulary has duplicate word {dup!r}")
        self._words = words
        self._index = MappingProxyType(index)

    @property
    def words(self) -> tuple[str, ...]:
        """The words, position = id."""
        return self._words

    @property
    def word_to_id(self) -> MappingProxyType:
        """Read-only mapping word → id."""
        return self._index

    def __len__(self) -> int:
        return len(self._words)

    def __contains__(self, word: object) -> bool:
        return word in self._index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self._words == other._words

    def __hash__(self) -> int:
        return hash(self._words)

    def __repr__(self) -> str:
        head = ", ".join(self._words[:5])
        return f"Vocabulary({len(self)} words: {head}{', …' if len(self) > 5 else ''})"

    def encode(self, tokens: Iterable[str]) -> np.ndarray:
        """int32[n] ids of the tokens that are in the vocabulary (out-of-vocabulary dropped)."""
        get = self._index.get
        ids = [i for i in map(get, tokens) if i is not None]
        return np.asarray(ids, dtype=np.int32)

    @classmethod
    def build(
        cls,
        token_docs: Sequence[Sequence[str]],
        *,
        min_df: int = 2,
        max_df: float = 0.5,
        max_size: int | None = None,
    ) -> "Vocabulary":
        """Words in at least ``min_df`` documents and at most ``max_df`` × D of them.

        ``max_df`` is a fraction of the number of documents D (1.0 keeps every word);
        ``max_size`` then keeps the most widespread words.
        """
        df: Counter[str] = Counter()
        for doc in token_docs:
            df.update(set(doc))
        return cls.from_document_frequencies(
            df, len(token_docs), min_df=min_df, max_df=max_df, max_size=max_size
        )

    @classmethod
    def from_document_frequencies(
        cls,
        df: dict[str, int],
        n_docs: int,
        *,
        min_df: int = 2,
        max_df: float = 0.5,
        max_size: int | None = None,
    ) -> "Vocabulary":
        """Apply the min_df / max_df / max_size rule of :meth:`build` to given frequencies."""
        _check_options(min_df, max_df, max_size)
        upper = max_df * n_docs
        kept = [(w, c) for w, c in df.items() if c >= min_df and c <= upper]
        kept.sort(key=lambda wc: (-wc[1], wc[0]))
        if max_size is not None:
            kept = kept[:max_size]
        return cls(w for w, _ in kept)

    def to_json(self) -> str:
        """A JSON document that :meth:`from_json` reads back."""
        return json.dumps(
            {"format": _FORMAT, "version": _VERSION, "words": list(self._words)},
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str) -> "Vocabulary":
        """Read a vocabulary written by :meth:`to_json` (with or without counts) or a run folder's vocab.json."""
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"vocabulary JSON is not valid JSON: {exc}") from None
        if isinstance(doc, dict) and "format" not in doc and isinstance(doc.get("words"), list):
            return cls(doc["words"])  # a run folder's vocab.json: the words of a trained model, in id order
        if not isinstance(doc, dict) or doc.get("format") != _FORMAT:
            raise CorpusError(f"vocabulary JSON lacks \"format\": \"{_FORMAT}\" (and is not a run folder's vocab.json)")
        if doc.get("version") != _VERSION:
            raise CorpusError(f"vocabulary JSON version {doc.get('version')!r} is not {_VERSION}")
        words = doc.get("words")
        if not isinstance(words, list):
            raise CorpusError("vocabulary JSON \"words\" must be a list of strings")
        return cls(words)


def _check_options(min_df: int, max_df: float, max_size: int | None) -> None:
    if min_df < 1:
        raise CorpusError(f"min_df must be at least 1, got {min_df}")
    if not 0.0 < max_df <= 1.0:
        raise CorpusError(f"max_df must be a fraction in (0, 1], got {max_df}")
    if max_size is not None and max_size < 1:
        raise CorpusError(f"max_size must be at least 1, got {max_size}")
