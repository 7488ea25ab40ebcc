"""The consortium's vocabulary through the aggregator's alignment (paper Fig. 3), for ``fedtopic vocab align``.

Each party keeps the words of its own documents that pass its local
``min_df``/``max_df`` rule, posts only those words (no counts, no documents) to a
vocabulary session every party derives from the config, and receives the union
once all have posted. Every party gets the same words in the same (code-point)
order, so the file each writes is byte-identical and ``node run --vocab`` takes it.

What this reveals to the aggregator, and to nobody else: which words occur in
each party's documents often enough to pass its filter. Parties for whom that is
too much use the offline ``vocab build`` / ``vocab merge`` route through a party
they trust instead.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.corpus.readers import read_corpus
from fedtopic.corpus.vocab_counts import VocabularyCounts
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.errors import ConfigError
from fedtopic.network.client import AggregatorClient
from fedtopic.network.errors import AggregatorRejected
from fedtopic.node.party_setup import load_own_keys
from fedtopic.node.session_names import default_session

VOCABULARY_PURPOSE = "vocabulary-alignment"


def vocabulary_session(cfg: ConsortiumConfig) -> str:
    """The alignment session id every party derives from the config (≤ 48 chars, like a training session)."""
    return f"{default_session(cfg)[:42]}-vocab"


def local_words(corpus: Path, *, min_df: int, max_df: float) -> list[str]:
    """The words of one party's documents kept by its local document-frequency rule, in code-point order."""
    words = read_corpus(corpus, min_df=min_df, max_df=max_df).vocab
    return sorted(words)


def _open(cfg: ConsortiumConfig, config_path: Path, party_id: str, key_file: Path | None, url: str | None,
          session: str | None) -> AggregatorClient:
    keys = load_own_keys(cfg, config_path, party_id, key_file)
    client = AggregatorClient(url or cfg.aggregator.url, keys, session or vocabulary_session(cfg),
                              link=cfg.aggregator.link)
    try:
        client.open_session(cfg.party_ids, combiner="vocabulary", meta={},
                            params={"purpose": VOCABULARY_PURPOSE})
    except AggregatorRejected as exc:
        client.close()
        if exc.code == "session_conflict":
            raise ConfigError(f"session {client.session!r} exists with other settings; pick another --session") \
                from None
        raise
    return client


def align_vocabulary(cfg: ConsortiumConfig, config_path: Path, party_id: str, corpus: Path, *,
                     key_file: Path | None = None, url: str | None = None, session: str | None = None,
                     min_df: int = 2, max_df: float = 0.5, timeout: float = 3600.0,
                     say: Callable[[str], None] = print) -> Vocabulary:
    """Post this party's words to the alignment session and return the consortium's union.

    Opens the session on first call (every party opens the same spec, so the
    later ones join); waits at most ``timeout`` seconds for the others.
    """
    words = local_words(corpus, min_df=min_df, max_df=max_df)
    if not words:
        raise ConfigError(f"{corpus}: no word passes min_df={min_df}, max_df={max_df}; lower --min-df")
    client = _open(cfg, config_path, party_id, key_file, url, session)
    try:
        say(f"party {party_id}: posting {len(words):,} words to {client.url}, session {client.session}")
        client.post_vocabulary(words)
        union = client.wait_vocabulary(timeout)
    finally:
        client.close()
    return Vocabulary(union)


def align_vocabulary_counts(cfg: ConsortiumConfig, config_path: Path, party_id: str, corpus: Path, *,
                            key_file: Path | None = None, url: str | None = None, session: str | None = None,
                            min_df: int = 2, max_df: float = 0.5, max_size: int | None = None,
                            timeout: float = 3600.0, say: Callable[[str], None] = print) -> VocabularyCounts:
    """gFedNTM's consensus (Alg. 1 stage 1): post every word of this party's documents with its document and
    term frequencies; every party receives the pooled counts and applies the same cut to them (min_df, max_df
    on the pooled document frequencies, then the max_size most frequent), which is the vocabulary a
    centralised corpus would have had. The aggregator learns every party's words *and* their frequencies."""
    from fedtopic.corpus.vocab_counts import merge_counts

    mine = VocabularyCounts.from_corpus(read_corpus(corpus, min_df=1, max_df=1.0))
    if not mine.words:
        raise ConfigError(f"{corpus}: this party's vocabulary is empty (no document has a word)")
    client = _open(cfg, config_path, party_id, key_file, url, session)
    try:
        say(f"party {party_id}: posting {len(mine.words):,} words with counts to {client.url}, "
            f"session {client.session}")
        client.post_vocabulary(mine.words, {"documents": mine.documents,
                                            "document_frequency": mine.document_frequency.tolist(),
                                            "term_frequency": mine.term_frequency.tolist()})
        out = client.aligned_vocabulary(timeout)
    finally:
        client.close()
    if out.document_frequency is None or out.term_frequency is None or out.documents is None:
        raise ConfigError(f"session {client.session!r}: another party posted its words without counts; "
                          "every party must run `vocab align --with-counts`")
    pooled = VocabularyCounts(tuple(out.words or ()), np.asarray(out.document_frequency, dtype=np.int64),
                              np.asarray(out.term_frequency, dtype=np.int64), out.documents)
    return merge_counts([pooled], min_df=min_df, max_df=max_df, max_size=max_size)
