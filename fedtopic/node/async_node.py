"""One party of an asynchronous algorithm (DAFed-LDA, any ``AsyncParty``) as its own process, over a real chain
(``fedtopic node run``).

The party loads its documents, connects to the chain named in the consortium
config, and runs the asynchronous loop (Alg. 3) with a checkpoint in its
state folder, so a killed node resumes where it stopped. When training ends the
algorithm writes its run folder (``write_async_party``: DAFed-LDA's θ_p, never
published, and Φ_Σ).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fedtopic.algorithms.asynchronous import AsyncPartyRun, PartyLog, RoundReport
from fedtopic.algorithms.registry import get_algorithm
from fedtopic.consortium.config import ConsortiumConfig
from fedtopic.crypto.card import card_of
from fedtopic.errors import TrainingError
from fedtopic.ledger.channel import ChainChannel
from fedtopic.ledger.endpoint import chain_for, registry_of
from fedtopic.node.async_loop import Liveness, run_party
from fedtopic.node.party_setup import prepare_party
from fedtopic.node.roster import delay_rng
from fedtopic.runs.folder import write_summary
from fedtopic.runs.history import FILE_NAME
from fedtopic.runs.vocabulary_release import join_release


def run_async_node(
    cfg: ConsortiumConfig,
    config_path: Path,
    party_id: str,
    *,
    key_file: Path | None = None,
    corpus: Path | None = None,
    vocab: Path | None = None,
    rpc: str | None = None,
    state_dir: Path | None = None,
    genesis_timeout: float = 600.0,
    say: Callable[[str], None] = print,
    on_round: Callable[[str, RoundReport, PartyLog], None] | None = None,
    fresh: bool = False,
    liveness: Liveness = Liveness(),
) -> dict[str, Any]:
    """Train party ``party_id`` to the end; returns (and writes to ``state_dir/model``) its summary."""
    prepared = prepare_party(cfg, config_path, party_id, key_file=key_file, corpus=corpus, vocab=vocab, state_dir=state_dir,
                             fresh=fresh, say=say)
    data, party, index, state_dir = prepared.data, prepared.party, prepared.index, prepared.state_dir
    algo = cfg.algorithm
    channel = ChainChannel(chain_for(cfg, rpc), registry_of(cfg), prepared.keys, shape=(data.train.n_words, algo.topics),
                           card=card_of(prepared.params))  # the card is checked on every read (issue 28)
    checkpoint = state_dir / "checkpoint.npz"
    published = channel.latest_round(party_id)
    if not checkpoint.exists() and published is not None:
        raise TrainingError(f"{party_id}'s channel already holds rounds 0..{published} of an earlier run, but {state_dir} "
                            "has no checkpoint of it (moved or wiped?): put it back to resume; a new run needs new "
                            "channels (`consortium deploy` of a new registry), since a channel's rounds only go up")
    lo, hi = algo.random_delay
    rng = delay_rng(algo.seed, index)
    say(f"party {party_id}: {data.train.n_docs:,} documents, {data.train.n_tokens:,} tokens from {data.source}; "
        f"reads {', '.join(cfg.channels_readable_by(party_id))}; state in {state_dir}")
    log = run_party(
        party,
        channel,
        readable=set(cfg.channels_readable_by(party_id)),
        max_sweeps=algo.iterations,
        stop=threading.Event(),
        delay=lambda: float(rng.uniform(lo, hi)) if hi > 0 else 0.0,
        on_round=on_round,
        genesis_timeout=genesis_timeout,
        checkpoint=checkpoint,
        history=state_dir / FILE_NAME,
        algorithm=cfg.algorithm.name,
        say=say,
        converge_tol=cfg.algorithm.spec().options["converge_tol"],
        liveness=liveness,
    )
    party.absorb(channel.read_latest())
    run = AsyncPartyRun(party, cfg.algorithm.spec(), data.train, data.test, data.tokenizer,
                        cfg.data.dataset or "own corpus", len(cfg.parties), log,
                        {"if_behind": "wait" if liveness.wait else "go-on",
                         "behind_limits": {"rounds": liveness.rounds, "seconds": liveness.seconds}})
    summary = get_algorithm(cfg.algorithm.name).write_async_party(state_dir / "model", run)
    if data.release is None:
        return summary
    summary = join_release(summary, data.release, party_id)
    write_summary(state_dir / "model", summary)
    return summary
