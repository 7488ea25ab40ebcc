"""The initializer's vocabulary alignment (paper Fig. 3): every party posts its words, all get the union.

Pure functions over the ``Store``; the caller holds the aggregator's lock and has
checked that the party is a member of the session.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from fedtopic.network.errors import Rejection
from fedtopic.network.schemas import VocabularyOut
from fedtopic.network.store import Store
from fedtopic.network.wire import sha256_hex


def vocabulary_digest(words: Sequence[str]) -> str:
    """sha256 of the words joined by line breaks (the words are checked to hold none)."""
    return sha256_hex("\n".join(words).encode())


def normalized_words(words: Sequence[str]) -> list[str]:
    """The distinct words in code-point order; Rejection 422 if one contains a line break."""
    bad = next((w for w in words if "\n" in w or "\r" in w), None)
    if bad is not None:
        raise Rejection(422, "invalid_vocabulary", f"word {bad!r} contains a line break")
    return sorted(set(words))


@dataclass(frozen=True)
class PostedCounts:
    """A party's counts, aligned with its normalized words."""

    documents: int
    document_frequency: list[int]
    term_frequency: list[int]


def normalized_counts(words: Sequence[str], documents: int | None, df: Sequence[int] | None,
                      tf: Sequence[int] | None) -> tuple[list[str], PostedCounts | None]:
    """(words in code-point order, their counts or None); Rejection 422 unless the counts are all or none,
    one per distinct word, with 0 ≤ df ≤ documents and tf ≥ df."""
    if documents is None and df is None and tf is None:
        return normalized_words(words), None
    if documents is None or df is None or tf is None or not len(df) == len(tf) == len(words):
        raise Rejection(422, "invalid_vocabulary", "counts need documents, document_frequency and term_frequency, "
                        "one frequency per word")
    order = normalized_words(words)
    if len(order) != len(words):
        raise Rejection(422, "invalid_vocabulary", "a vocabulary with counts must not repeat a word")
    if any(d > documents or t < d for d, t in zip(df, tf)):
        raise Rejection(422, "invalid_vocabulary", "a document frequency exceeds the documents or the term frequency")
    index = {w: i for i, w in enumerate(words)}
    return order, PostedCounts(documents, [df[index[w]] for w in order], [tf[index[w]] for w in order])


def record_vocabulary(store: Store, sid: str, party: str, words: list[str], counts: PostedCounts | None = None) -> None:
    """Store ``party``'s normalized words (and counts) once; posting the same again is fine, a different one is
    a 409."""
    digest = vocabulary_digest(words)
    if counts is not None:
        digest = sha256_hex(json.dumps([digest, counts.documents, counts.document_frequency,
                                        counts.term_frequency]).encode())
    have = store.vocabulary_hashes(sid).get(party)
    if have is None:
        store.put_vocabulary(sid, party, words, digest, None if counts is None else asdict(counts))
    elif have != digest:
        raise Rejection(409, "vocabulary_conflict", f"party {party!r} already posted a different vocabulary")


def alignment_state(store: Store, sid: str, expected: Sequence[str]) -> VocabularyOut:
    """Who has posted; once all have, the union in code-point order with its size and digest."""
    posted = store.vocabulary_hashes(sid)
    missing = [p for p in expected if p not in posted]
    out = VocabularyOut(session_id=sid, posted=[p for p in expected if p in posted], missing=missing,
                        complete=not missing)
    if missing:
        return out
    posted_all = store.vocabularies(sid)
    union = sorted(set().union(*(words for words, _ in posted_all)))
    update: dict = {"words": union, "size": len(union), "sha256": vocabulary_digest(union)}
    if all(counts is not None for _, counts in posted_all):  # the pooled frequencies (gFedNTM's consensus)
        index = {w: i for i, w in enumerate(union)}
        df, tf = [0] * len(union), [0] * len(union)
        for words, counts in posted_all:
            for w, d, t in zip(words, counts["document_frequency"], counts["term_frequency"]):
                df[index[w]] += d
                tf[index[w]] += t
        update |= {"documents": sum(c["documents"] for _, c in posted_all), "document_frequency": df,
                   "term_frequency": tf}
    return out.model_copy(update=update)
