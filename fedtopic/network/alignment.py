"""The initializer's vocabulary alignment (paper Fig. 3): every party posts its words, all get the union.

Pure functions over the ``Store``; the caller holds the aggregator's lock and has
checked that the party is a member of the session.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def record_vocabulary(store: Store, sid: str, party: str, words: list[str]) -> None:
    """Store ``party``'s normalized words once; posting the same again is fine, a different list is a 409."""
    digest = vocabulary_digest(words)
    have = store.vocabulary_hashes(sid).get(party)
    if have is None:
        store.put_vocabulary(sid, party, words, digest)
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
    union = sorted(set().union(*store.vocabularies(sid)))
    return out.model_copy(update={"words": union, "size": len(union), "sha256": vocabulary_digest(union)})
