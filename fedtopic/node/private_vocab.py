"""The consortium's vocabulary without showing a word to the aggregator or a rare word to anyone (``vocab align``,
the default under every protection but ``none``).

Three sessions on the aggregator, every party in each (a party that never comes stops the others at ``timeout``):

1. ``<base>-pv1``, under ``mask``: the launching party (first in the config) makes the consortium's vocabulary
   secret and seals it for every party in the session's params (as the mask secret of a training is); each party
   sends its documents' weights per keyed-hash cell with a Skellam share of the noise
   (``privacy.vocab_release``); everyone receives the noisy total per cell, and the cells at or above the
   threshold make the candidates. Released: (ε, δ)-DP per document.
2. ``<base>-pv2``, ``threshold-reveal``: each party sends a Shamir share of every candidate word it holds (after
   its own ``min_df``/``max_df`` rule) with the word sealed (``crypto.threshold_words``); the aggregator passes on
   the words that at least ``min_parties`` parties sent; every party opens them and sorts them (code-point order):
   the same vocabulary everywhere.
3. With counts (gFedNTM's consensus): ``<base>-pv3``, under ``mask`` again, sums every party's document and term
   frequencies of the admitted words and its document count, and every party applies the same pooled cut
   (``merge_counts``). The aggregator sees only masked sums; the parties learn the pooled counts of admitted words.

What each party learns besides the vocabulary: the noisy weight of every cell (DP) and, of each admitted word, that
at least ``min_parties`` parties hold it. What the aggregator learns: the same noisy cells, and by tag (never by
word) which parties hold which candidates. docs/privacy.md states the rules.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.corpus.readers import read_corpus
from fedtopic.corpus.vocab_counts import VocabularyCounts, merge_counts
from fedtopic.crypto.keys import PartyKeys
from fedtopic.crypto.protect import ProtectionContext
from fedtopic.crypto.threshold_words import (
    MAX_WORD_BYTES,
    VocabularyKeys,
    reveal_word,
    share_word,
    vocabulary_keys,
    word_bucket,
)
from fedtopic.crypto.word_records import pack_records, unpack_revealed
from fedtopic.errors import ConfigError, CorpusError, TrainingError
from fedtopic.network.client import AggregatorClient
from fedtopic.network.errors import AggregatorRejected
from fedtopic.node.party_setup import load_own_keys
from fedtopic.node.protection import sealed_session
from fedtopic.node.session_names import default_session
from fedtopic.privacy.vocab_release import (
    ReleaseSettings,
    candidates,
    document_weights,
    max_cell,
    noisy_part,
    release_report,
)
from fedtopic.protections import get_protection

PURPOSE = "private-vocabulary"
MAX_RECORDS = 1 << 19
"""The most candidate words one party may send (64 MiB of records)."""
MAX_FREQUENCY = (1 << 40) - 1
"""The largest document or term frequency the counts stage carries."""


def private_sessions(cfg: ConsortiumConfig, session: str | None = None) -> tuple[str, str, str]:
    """The three session ids every party derives from the config (or from ``session``), ≤ 48 chars each."""
    base = (session or default_session(cfg))[:44]
    return f"{base}-pv1", f"{base}-pv2", f"{base}-pv3"


@dataclass(frozen=True)
class PrivateVocabulary:
    """What a private alignment gives every party: the vocabulary, its pooled counts (with counts only) and the
    release's record (ε, δ, settings and sizes) for the vocabulary file and the party's summary."""

    words: tuple[str, ...]
    counts: VocabularyCounts | None
    release: dict[str, Any]


@dataclass(frozen=True)
class _Party:
    cfg: ConsortiumConfig
    keys: PartyKeys
    url: str
    timeout: float

    @property
    def ids(self) -> list[str]:
        return list(self.cfg.party_ids)

    @property
    def publics(self) -> list[bytes]:
        return [self.cfg.party(p).x25519_public_bytes for p in self.ids]

    def client(self, session: str) -> AggregatorClient:
        return AggregatorClient(self.url, self.keys, session, roster={p.id: p.address for p in self.cfg.parties},
                                link=self.cfg.aggregator.link)

    def mask_context(self, session: str, shape: tuple[int, int], max_value: int, secret: bytes) -> ProtectionContext:
        return ProtectionContext(session=session, round=0, shape=shape, n_parties=len(self.ids),
                                 party_index=self.ids.index(self.keys.party_id), max_value=max_value,
                                 x25519_private=self.keys.x25519_private_key, party_publics=tuple(self.publics),
                                 mask_secret=secret)

    def exchange(self, client: AggregatorClient, payload: bytes) -> bytes:
        """This party's update in round 0 and the round's aggregate (every party must be in it)."""
        result = client.exchange(0, payload, self.timeout)
        if set(result.contributors) != set(self.ids):
            raise TrainingError(f"session {client.session!r} closed without {', '.join(result.missing)}")
        return result.payload


def _party_rng(keys: PartyKeys, session: str) -> np.random.Generator:
    """The party's noise and sampling, seeded by its secret and the session (never by anything another knows)."""
    seed = hmac.new(keys.noise_secret, b"fedtopic/vocabulary/rng\x00" + session.encode(), hashlib.sha256).digest()
    return np.random.default_rng(int.from_bytes(seed[:16], "big"))


def _documents(corpus: Path) -> tuple[VocabularyCounts, list[np.ndarray]]:
    """This party's counts (every word) and the word ids of each document."""
    full = read_corpus(corpus, min_df=1, max_df=1.0)
    counts = VocabularyCounts.from_corpus(full)
    if not counts.words:
        raise ConfigError(f"{corpus}: this party's vocabulary is empty (no document has a word)")
    if full.n_docs > (1 << 22):
        raise CorpusError(f"{corpus}: {full.n_docs:,} documents, more than the private alignment's 4,194,304")
    docs = [full.words[full.doc_ptr[d]:full.doc_ptr[d + 1]] for d in range(full.n_docs)]
    return counts, docs


def _stage_candidates(party: _Party, session: str, settings: ReleaseSettings, params: dict[str, Any],
                      counts: VocabularyCounts, docs: list[np.ndarray],
                      say: Callable[[str], None]) -> tuple[bytes, np.ndarray, np.ndarray]:
    """Stage 1: (the vocabulary secret, bool[buckets] candidate cells, int64[V] each own word's cell)."""
    mask = get_protection("mask")
    p = len(party.ids)
    shape, top = (settings.buckets, 1), max_cell(settings, p)

    def spec(secrets: Any) -> tuple[str, dict[str, Any]]:
        return "mask", mask.counts(party.mask_context(session, shape, top, secrets.mask_secret)).meta

    with party.client(session) as client:
        secrets = sealed_session(client, party.ids, party.keys, party.publics, launcher=party.cfg.parties[0].address,
                                 protection=mask, key_bits=0,
                                 params=params, timeout=party.timeout, spec=spec)
        keys = vocabulary_keys(secrets.mask_secret, session)
        cells = np.array([word_bucket(keys, w, settings.buckets) for w in counts.words], dtype=np.int64)
        rng = _party_rng(party.keys, session)
        part = noisy_part(document_weights([cells[d] for d in docs], settings, rng), settings, p, rng)
        codec = mask.counts(party.mask_context(session, shape, top, secrets.mask_secret))
        say(f"party {party.keys.party_id}: stage 1 of 3, the noisy weights of {settings.buckets:,} cells")
        total = codec.decode(party.exchange(client, codec.encode(part.update.reshape(shape), 0)), 0)
        client.finished()
    return secrets.mask_secret, candidates(total, settings, p), cells


def _stage_reveal(party: _Party, session: str, keys: VocabularyKeys, threshold: int,
                  words: list[str], say: Callable[[str], None]) -> tuple[list[str], int]:
    """Stage 2: (the admitted words in code-point order, how many of ``words`` were too long to carry)."""
    carried = [w for w in words if len(w.encode("utf-8")) <= MAX_WORD_BYTES]
    if len(carried) > MAX_RECORDS:
        raise CorpusError(f"{len(carried):,} candidate words, more than the private alignment's {MAX_RECORDS:,}; "
                          "raise the vocabulary threshold")
    records = [share_word(keys, w, threshold, party.keys.noise_secret) for w in carried]
    with party.client(session) as client:
        client.open_session(party.ids, combiner="threshold-reveal",
                            meta={"threshold": threshold, "max_records": MAX_RECORDS}, params={"purpose": PURPOSE})
        say(f"party {party.keys.party_id}: stage 2 of 3, shares of {len(records):,} candidate words")
        revealed = party.exchange(client, pack_records(records))
        client.finished()
    admitted = sorted({reveal_word(keys, r) for r in unpack_revealed(revealed, threshold)})
    return admitted, len(words) - len(carried)


def _stage_counts(party: _Party, session: str, secret: bytes, words: list[str], own: VocabularyCounts,
                  say: Callable[[str], None]) -> VocabularyCounts:
    """Stage 3: the pooled document and term frequencies of ``words`` and the pooled document count."""
    index = {w: i for i, w in enumerate(own.words)}
    rows = np.zeros((len(words) + 1, 2), dtype=np.int64)
    for i, w in enumerate(words):
        j = index.get(w)
        if j is not None:
            rows[i] = own.document_frequency[j], own.term_frequency[j]
    rows[-1, 0] = own.documents
    if int(rows.max()) > MAX_FREQUENCY:
        raise CorpusError(f"a frequency above {MAX_FREQUENCY:,} cannot be carried")
    mask = get_protection("mask")
    codec = mask.counts(party.mask_context(session, rows.shape, MAX_FREQUENCY, secret))
    with party.client(session) as client:
        client.open_session(party.ids, combiner="mask", meta=codec.meta, params={"purpose": PURPOSE})
        say(f"party {party.keys.party_id}: stage 3 of 3, the pooled counts of {len(words):,} words")
        total = codec.decode(party.exchange(client, codec.encode(rows, 0)), 0)
        client.finished()
    return VocabularyCounts(tuple(words), total[:-1, 0].copy(), total[:-1, 1].copy(), int(total[-1, 0]))


def align_privately(cfg: ConsortiumConfig, config_path: Path, party_id: str, corpus: Path, *,
                    settings: ReleaseSettings = ReleaseSettings(), with_counts: bool = False, min_df: int = 2,
                    max_df: float = 0.5, max_size: int | None = None, key_file: Path | None = None,
                    url: str | None = None, session: str | None = None, timeout: float = 3600.0,
                    say: Callable[[str], None] = print) -> PrivateVocabulary:
    """This party's part of the private alignment (module docstring); every party gets the same result.

    Without counts a party offers the words that pass its own ``min_df``/``max_df`` rule (as plain alignment);
    with counts it offers every word and the pooled cut (``min_df``, ``max_df``, ``max_size``) follows stage 3."""
    settings = settings.check(len(cfg.party_ids))
    party = _Party(cfg, load_own_keys(cfg, config_path, party_id, key_file), url or cfg.aggregator.url, timeout)
    own, docs = _documents(corpus)
    s1, s2, s3 = private_sessions(cfg, session)
    params: dict[str, Any] = {"purpose": PURPOSE, "with_counts": with_counts} | settings.as_params()
    if with_counts:
        params |= {"min_df": min_df, "max_df": max_df, "max_size": max_size}
    try:
        secret, cells_in, cells = _stage_candidates(party, s1, settings, params, own, docs, say)
        if with_counts:
            offered = np.ones(len(own.words), dtype=bool)
        else:
            offered = (own.document_frequency >= min_df) & (own.document_frequency <= max_df * own.documents)
        mine = [w for w, keep, c in zip(own.words, offered, cells) if keep and cells_in[c]]
        admitted, too_long = _stage_reveal(party, s2, vocabulary_keys(secret, s1), settings.min_parties, mine, say)
        pooled = _stage_counts(party, s3, secret, admitted, own, say) if with_counts else None
    except AggregatorRejected as exc:
        if exc.code == "session_conflict":
            raise ConfigError(f"a private alignment session exists with other settings; pick another --session "
                              f"({exc.reason})") from None
        raise
    counts = None if pooled is None else merge_counts([pooled], min_df=min_df, max_df=max_df, max_size=max_size)
    words = tuple(admitted) if counts is None else counts.words
    report = release_report(settings)
    release = {"mechanism": "private vocabulary (DP set union under mask, then a threshold reveal)",
               "epsilon": report.epsilon, "delta": report.delta, "unit": "one document of one party",
               "rdp": report.as_dict()["rdp"], "parties": len(party.ids), "settings": asdict(settings),
               "candidate_cells": int(cells_in.sum()), "offered": len(mine), "admitted": len(admitted),
               "too_long": too_long, "words": len(words), "with_counts": with_counts}
    return PrivateVocabulary(words, counts, release)
