"""Numba kernels for the token store's tokeniser: words found in UTF-8 bytes and numbered by an open-addressing
hash table, with no Python string per token (``corpus.store_build``; a regex and a dict cost ~200 ns a token,
these ~20).

A word is a run of a–z bytes in a document of lower-cased ASCII text (what ``[^\\W\\d_]+`` finds there), or a run
of non-space bytes in a document the caller split already (any other text: the regex's tokens joined by spaces).
The table keeps each distinct word's bytes once (``arena``/``word_ptr``), numbers words in first-seen order, and
counts the documents each occurs in (``df``; ``stamp`` holds the last document that counted it).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


@njit(cache=True, nogil=True)
def _hash(buf, a, b):
    h = _FNV_OFFSET
    for i in range(a, b):
        h = (h ^ np.uint64(buf[i])) * _FNV_PRIME
    return h


@njit(cache=True, nogil=True)
def _same(buf, a, b, arena, word_ptr, w):
    s, e = word_ptr[w], word_ptr[w + 1]
    if e - s != b - a:
        return False
    for i in range(b - a):
        if arena[s + i] != buf[a + i]:
            return False
    return True


@njit(cache=True, nogil=True)
def rehash(slots, arena, word_ptr, n_words):
    """int64[len(slots)] holding every word's id at its place (slots: a new, larger table's size, all -1)."""
    mask = np.uint64(len(slots) - 1)
    for w in range(n_words):
        j = _hash(arena, word_ptr[w], word_ptr[w + 1]) & mask
        while slots[j] >= 0:
            j = (j + np.uint64(1)) & mask
        slots[j] = w
    return slots


@njit(cache=True, nogil=True)
def tokenise_docs(buf, doc_ptr, presplit, d0, doc_base, slots, arena, word_ptr, n_words, n_arena, df, stamp,
                  ids, n_ids, lengths):
    """Number the words of documents d0.. of ``buf`` (uint8, document d is buf[doc_ptr[d]:doc_ptr[d+1]]),
    appending ids to ``ids`` from n_ids and each document's token count to ``lengths[d]``.

    Stops before a document that could overflow the table (slots over half full), the arena, the word arrays or
    ``ids``; returns (next document, n_words, n_arena, n_ids) for the caller to grow them and call again.
    ``doc_base``: the first document's number in the whole run (what ``stamp`` records)."""
    mask = np.uint64(len(slots) - 1)
    n_docs = len(doc_ptr) - 1
    d = d0
    while d < n_docs:
        a0, a1 = doc_ptr[d], doc_ptr[d + 1]
        room = a1 - a0  # a document adds at most this many words, bytes and tokens
        if (2 * (n_words + room) > len(slots) or n_arena + room > len(arena) or n_words + room >= len(df)
                or n_words + room >= len(stamp) or n_words + room + 1 >= len(word_ptr) or n_ids + room > len(ids)):
            break
        split = presplit[d]
        count = 0
        i = a0
        while i < a1:
            c = buf[i]
            if (c == 32) if split else (c < 97 or c > 122):
                i += 1
                continue
            s = i
            while i < a1:
                c = buf[i]
                if (c == 32) if split else (c < 97 or c > 122):
                    break
                i += 1
            j = _hash(buf, s, i) & mask
            while True:
                w = slots[j]
                if w < 0:
                    w = n_words
                    slots[j] = w
                    arena[n_arena:n_arena + i - s] = buf[s:i]
                    n_arena += i - s
                    n_words += 1
                    word_ptr[n_words] = n_arena
                    stamp[w] = -1
                    df[w] = 0
                    break
                if _same(buf, s, i, arena, word_ptr, w):
                    break
                j = (j + np.uint64(1)) & mask
            if stamp[w] != doc_base + d:
                stamp[w] = doc_base + d
                df[w] += 1
            ids[n_ids] = w
            n_ids += 1
            count += 1
        lengths[d] = count
        d += 1
    return d, n_words, n_arena, n_ids


class WordTable:
    """The word table of one piece of text: the kernels' arrays, grown as ``tokenise_docs`` asks."""

    def __init__(self) -> None:
        self.slots = np.full(1 << 16, -1, dtype=np.int64)
        self.arena = np.empty(1 << 20, dtype=np.uint8)
        self.word_ptr = np.zeros((1 << 15) + 1, dtype=np.int64)
        self.df = np.zeros(1 << 15, dtype=np.int64)
        self.stamp = np.full(1 << 15, -1, dtype=np.int64)
        self.n_words = self.n_arena = 0

    def tokenise(self, parts: list[bytes], presplit: list[bool]) -> tuple[np.ndarray, np.ndarray]:
        """(uint32 ids of every token, int64 tokens per document) of the documents ``parts``."""
        buf = np.frombuffer(b"".join(parts), dtype=np.uint8)
        doc_ptr = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=doc_ptr[1:])
        split = np.array(presplit, dtype=np.bool_)
        ids = np.empty(max(len(buf) // 4, 1024), dtype=np.uint32)
        lengths = np.zeros(len(parts), dtype=np.int64)
        d = n_ids = 0
        while True:
            d, self.n_words, self.n_arena, n_ids = tokenise_docs(
                buf, doc_ptr, split, d, 0, self.slots, self.arena, self.word_ptr, self.n_words, self.n_arena,
                self.df, self.stamp, ids, n_ids, lengths)
            if d == len(parts):
                return ids[:n_ids], lengths
            room = int(doc_ptr[d + 1] - doc_ptr[d])
            ids = _grown(ids, n_ids + room)
            self.arena = _grown(self.arena, self.n_arena + room)
            self.df = _grown(self.df, self.n_words + room + 1)
            self.stamp = _grown(self.stamp, self.n_words + room + 1)
            self.word_ptr = _grown(self.word_ptr, self.n_words + room + 2)
            if 2 * (self.n_words + room) > len(self.slots):
                size = len(self.slots)
                while 2 * (self.n_words + room) > size:
                    size *= 2
                self.slots = rehash(np.full(size, -1, dtype=np.int64), self.arena, self.word_ptr, self.n_words)

    def words(self) -> list[str]:
        """The distinct words, id order."""
        blob, ptr = self.arena[:self.n_arena].tobytes(), self.word_ptr[:self.n_words + 1].tolist()
        return [blob[a:b].decode("utf-8") for a, b in zip(ptr[:-1], ptr[1:])]


def _grown(arr: np.ndarray, need: int) -> np.ndarray:
    """``arr``, or a copy at least twice as long when it is shorter than ``need``."""
    if len(arr) >= need:
        return arr
    out = np.empty(max(need, 2 * len(arr)), dtype=arr.dtype)
    out[:len(arr)] = arr
    return out
