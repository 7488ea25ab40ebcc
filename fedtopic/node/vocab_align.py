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

from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.corpus.readers import read_corpus
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.errors import ConfigError
from fedtopic.network.client import AggregatorClient
from fedtopic.network.errors import AggregatorRejected
from fedtopic.node.csfed_node import default_session
from fedtopic.node.party_setup import load_own_keys

VOCABULARY_PURPOSE = "vocabulary-alignment"


def vocabulary_session(cfg: ConsortiumConfig) -> str:
    """The alignment session id every party derives from the config (≤ 48 chars, like a training session)."""
    return f"{default_session(cfg)[:42]}-vocab"


def local_words(corpus: Path, *, min_df: int, max_df: float) -> list[str]:
    """The words of one party's documents kept by its local document-frequency rule, in code-point order."""
    words = read_corpus(corpus, min_df=min_df, max_df=max_df).vocab
    return sorted(words)


def align_vocabulary(cfg: ConsortiumConfig, config_path: Path, party_id: str, corpus: Path, *,
                     key_file: Path | None = None, url: str | None = None, session: str | None = None,
                     min_df: int = 2, max_df: float = 0.5, timeout: float = 3600.0,
                     say: Callable[[str], None] = print) -> Vocabulary:
    """Post this party's words to the alignment session and return the consortium's union.

    Opens the session on first call (every party opens the same spec, so the
    later ones join); waits at most ``timeout`` seconds for the others.
    """
    keys = load_own_keys(cfg, config_path, party_id, key_file)
    words = local_words(corpus, min_df=min_df, max_df=max_df)
    if not words:
        raise ConfigError(f"{corpus}: no word passes min_df={min_df}, max_df={max_df}; lower --min-df")
    client = AggregatorClient(url or cfg.aggregator.url, keys, session or vocabulary_session(cfg))
    try:
        try:
            client.open_session(cfg.party_ids, combiner="none", meta={"shape": [1, 1]},
                                params={"purpose": VOCABULARY_PURPOSE})
        except AggregatorRejected as exc:
            if exc.code == "session_conflict":
                raise ConfigError(f"session {client.session!r} exists with other settings; pick another --session") \
                    from None
            raise
        say(f"party {party_id}: posting {len(words):,} words to {client.url}, session {client.session}")
        client.post_vocabulary(words)
        union = client.wait_vocabulary(timeout)
    finally:
        client.close()
    return Vocabulary(union)
