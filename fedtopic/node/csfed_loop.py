"""One CSFed-LDA party's synchronous protocol over the aggregator (paper Alg. 1 and 2, §6.1).

Setup (session ``<session>-setup``): join (the launcher opens it with the
sealed secrets as params, see ``csfed_protection``) → vocabulary alignment
(the union must be exactly this party's vocabulary, and the ordered
vocabulary's hash must equal the launcher's) → open this party's secret →
global word ranking: every party submits its word-frequency vector f_p under
the session's protection (packed Paillier for the Paillier schemes), decodes
Σ_p f_p and sorts it (IPHE/UPHE pick their δ·V rows from it; the largest
global frequency bounds every cell of any N_p, which sizes packing and masks).

Training (session ``<session>``, every party opens it with the same spec):
aggregator round a carries N_p after the party's ``a``-th training round
(round 0 = genesis). A party submits, waits for the aggregate (sending its
mask recovery message if the round lost parties), decodes N_Σ, takes
N_Σ − N_p as the others' frozen counts (Eq. 8; N_p only if it contributed)
and runs ``steps`` sweeps (Eq. 10). The last aggregate gives Φ_Σ (Eq. 9).

Crash safety: the protected update of training round r is written to
``pending-r.bin`` (with its aggregator round and the hash of N_p) before the
checkpoint of round r, and only those bytes are ever submitted for that
round; a restart resubmits them (the aggregator treats the same bytes as
already accepted), so no aggregator round ever sees two contents from one
party. A round that failed (mask survivors missing) is redone under the next
aggregator round number.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from fedtopic.algorithms.lda.party import LDAParty
from fedtopic.crypto.keys import PartyKeys
from fedtopic.crypto.protect import ProtectionContext, rank_words
from fedtopic.errors import ConfigError, TrainingError
from fedtopic.network.client import AggregateResult, AggregatorClient
from fedtopic.network.errors import AggregatorRejected, RecoveryRequested
from fedtopic.network.schemas import SessionOut
from fedtopic.node.checkpoint import load_checkpoint, save_checkpoint
from fedtopic.node.csfed_protection import (
    SETUP_MAX_VALUE,
    PartyProtection,
    new_secrets,
    open_secrets,
    sealed_params,
    setup_protection,
)
from fedtopic.runs.history import TOP_WORDS_EVERY, HistoryLine, HistoryWriter


@dataclass(frozen=True)
class CSFedSettings:
    """The consortium-wide protocol settings (from ``aggregator`` and ``algorithm`` of the config)."""

    session: str
    protection: str
    algorithm: str = "csfed-lda"
    delta: float = 0.005
    key_bits: int = 2048
    iterations: int = 100
    steps: int = 1
    straggler_deadline_seconds: float | None = None
    round_timeout: float = 3600.0
    patience: float = 600.0  # seconds a node keeps retrying an unreachable aggregator


@dataclass
class RoundRecord:
    """One aggregator round as this party saw it (seconds of wall time, bytes of payload)."""

    round: int
    train_round: int
    sweep_seconds: float = 0.0
    encode_seconds: float = 0.0
    submit_seconds: float = 0.0
    fetch_seconds: float = 0.0
    decode_seconds: float = 0.0
    bytes_sent: int = 0
    bytes_received: int = 0
    contributors: list[str] = field(default_factory=list)
    aggregate_tokens: int = 0
    recovery_sent: bool = False
    accepted: bool = True
    epsilon: float | None = None  # the (ε, δ) this party's releases have cost once this one is out (DP on)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def vocabulary_digest(words: Sequence[str]) -> str:
    """sha256 of the words joined by newlines (the aggregator's digest when ``words`` is sorted)."""
    return _sha("\n".join(words).encode("utf-8"))


class CSFedParticipant:
    """Party ``keys.party_id`` (position ``party_ids.index``) of a CSFed-LDA session at ``url``."""

    def __init__(self, party: LDAParty, keys: PartyKeys, url: str, party_ids: Sequence[str],
                 publics: Sequence[bytes], settings: CSFedSettings, state_dir: Path,
                 say: Callable[[str], None] = print, history: Path | None = None) -> None:
        self.party, self.keys, self.url, self.settings = party, keys, url, settings
        self.ids = list(party_ids)
        self.index = self.ids.index(keys.party_id)
        self.publics = tuple(publics)
        self.state_dir = state_dir
        self.say = say
        self.history = None if history is None else HistoryWriter(
            history, resumed=(state_dir / "checkpoint.npz").exists())
        self.records: list[RoundRecord] = []
        self.final_sum: np.ndarray | None = None
        self.protection: PartyProtection | None = None
        self.client = AggregatorClient(url, keys, settings.session, patience=settings.patience)
        self._agg_round = 0
        self._payload = b""
        self._sweep_seconds = 0.0
        self._encode_seconds = 0.0

    # setup -------------------------------------------------------------------------------
    def _context(self, session: str, shape: tuple[int, int], max_value: int, secrets, ranking=None) -> ProtectionContext:
        return ProtectionContext(session=session, round=0, shape=shape, n_parties=len(self.ids),
                                 party_index=self.index, max_value=max_value, delta=self.settings.delta,
                                 paillier_public=secrets.paillier_public, paillier_private=secrets.paillier_private,
                                 word_ranking=ranking, x25519_private=self.keys.x25519_private_key,
                                 party_publics=self.publics, mask_secret=secrets.mask_secret)

    def _join_setup(self, client: AggregatorClient, vocab_hash: str, v: int) -> SessionOut:
        s = self.settings
        name = setup_protection(s.protection)
        if s.protection == "none":
            return client.open_session(self.ids, combiner=name, meta={"shape": [v, 1]},
                                       params={"vocab_sha256": vocab_hash})
        until = time.monotonic() + s.round_timeout
        while True:
            try:
                return client.session_info()
            except AggregatorRejected as exc:
                if exc.code != "unknown_session":
                    raise
            if self.index == 0:  # the launcher: generate, seal for everyone (itself too), open
                secrets = new_secrets(s.protection, s.key_bits)
                meta = PartyProtection(name, self._context(client.session, (v, 1), SETUP_MAX_VALUE, secrets)).meta
                params = {"vocab_sha256": vocab_hash} | sealed_params(
                    secrets, dict(zip(self.ids, self.publics)), client.session)
                return client.open_session(self.ids, combiner=name, meta=meta, params=params)
            if time.monotonic() > until:
                raise TrainingError(f"setup session {client.session!r} was not opened by {self.ids[0]} within "
                                    f"{s.round_timeout:.0f} s")
            time.sleep(0.2)

    def setup(self) -> None:
        """Join, align vocabularies, receive secrets, compute the global word ranking, open the training session."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        corpus, s = self.party.corpus, self.settings
        v, k = corpus.n_words, self.party.hyper.n_topics
        vocab_hash = vocabulary_digest(corpus.vocab)
        setup = AggregatorClient(self.url, self.keys, f"{s.session}-setup", patience=s.patience)
        try:
            spec = self._join_setup(setup, vocab_hash, v)
            if spec.params.get("vocab_sha256") != vocab_hash:
                raise ConfigError(f"party {self.keys.party_id}'s vocabulary differs from {spec.created_by}'s "
                                  "(every party must encode with the consortium's vocabulary)")
            setup.post_vocabulary(list(corpus.vocab))
            union = setup.wait_vocabulary(s.round_timeout)
            if len(union) != v or vocabulary_digest(union) != vocabulary_digest(sorted(corpus.vocab)):
                raise ConfigError(f"the consortium's vocabulary union has {len(union)} words, party "
                                  f"{self.keys.party_id} has {v}: parties use different vocabularies")
            secrets = open_secrets(s.protection, spec.meta, spec.params, self.keys.party_id,
                                   self.keys.x25519_private_key, setup.session, s.key_bits)
            freq_prot = PartyProtection(setup_protection(s.protection),
                                        self._context(setup.session, (v, 1), SETUP_MAX_VALUE, secrets))
            if freq_prot.meta != spec.meta:
                raise ConfigError(f"setup session {setup.session!r} has a meta this party does not derive "
                                  "(another consortium, key or protection)")
            freqs = self.party.word_frequencies().reshape(v, 1)  # a DP release when the party has DP on
            payload = self._cached(self.state_dir / "setup-update.bin", lambda: freq_prot.encode(freqs, 0))
            self._submit(setup, 0, payload)
            total = self._await(setup, freq_prot, 0)[0].reshape(-1)
        finally:
            setup.close()
        # bound on one party's cell: the largest global word frequency, rounded up to 2^m - 1 so that the
        # session meta (which the aggregator reads) tells only its bit length, not the frequency itself
        max_value = (1 << max(1, int(total.max())).bit_length()) - 1
        self.party.cap_releases(max_value)  # a DP party's noisy releases must stay within the session's bound
        ctx = self._context(s.session, (v, k), max_value, secrets, rank_words(total))
        self.protection = PartyProtection(s.protection, ctx, pool=True)
        hyper = self.party.hyper
        params = {"algorithm": s.algorithm, "topics": k, "iterations": s.iterations, "steps": s.steps, "alpha": hyper.resolved_alpha,
                  "beta": hyper.beta, "seed": hyper.seed, "vocab_sha256": vocab_hash}
        try:
            self.client.open_session(self.ids, combiner=s.protection, meta=self.protection.meta, params=params,
                                     straggler_deadline_seconds=s.straggler_deadline_seconds)
        except AggregatorRejected as exc:
            if exc.code == "session_conflict":
                raise ConfigError(f"training session {s.session!r} exists with other settings: {exc.reason}") \
                    from None
            raise

    # helpers -------------------------------------------------------------------------------
    @staticmethod
    def _cached(path: Path, make: Callable[[], bytes]) -> bytes:
        if path.is_file():
            return path.read_bytes()
        data = make()
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
        return data

    @staticmethod
    def _submit(client: AggregatorClient, round: int, payload: bytes) -> bool:
        """Submit; False if the round closed without this party (a straggler: it reads the aggregate anyway)."""
        try:
            client.submit(round, payload)
            return True
        except AggregatorRejected as exc:
            if exc.code == "round_closed":
                return False
            raise

    def _await(self, client: AggregatorClient, prot: PartyProtection, round: int,
               record: RoundRecord | None = None) -> tuple[np.ndarray, AggregateResult]:
        """Decoded aggregate of ``round``, sending a mask recovery message whenever the aggregator asks."""
        t0 = time.perf_counter()
        until = time.monotonic() + self.settings.round_timeout
        while True:
            try:
                res = client.fetch_aggregate(round, max(1.0, until - time.monotonic()), self._waiting)
                break
            except RecoveryRequested as req:
                dropped = [self.ids.index(p) for p in req.dropped]
                client.post_recovery(round, prot.recovery(dropped, round))
                self.say(f"{self.keys.party_id}: round {round} lost {', '.join(req.dropped)}; recovery sent")
                if record is not None:
                    record.recovery_sent = True
        t1 = time.perf_counter()
        total = prot.decode(res.payload, round)
        if record is not None:
            record.fetch_seconds, record.decode_seconds = t1 - t0, time.perf_counter() - t1
            record.bytes_received, record.contributors = len(res.payload), list(res.contributors)
            record.aggregate_tokens = int(total.sum())
        return total, res

    def _waiting(self, round: int, missing: list[str], seconds: float) -> None:
        self.say(f"{self.keys.party_id}: aggregator round {round} waits for {', '.join(missing) or 'the aggregator'} "
                 f"({seconds:.0f} s)")

    # training -------------------------------------------------------------------------------
    def _pending(self, train_round: int) -> Path:
        return self.state_dir / f"pending-{train_round}"

    def _write_pending(self, agg_round: int) -> None:
        """Encode N_p for ``agg_round`` and persist it (before the checkpoint that names its training round)."""
        assert self.protection is not None
        counts = self.party.own_counts()
        t0 = time.perf_counter()
        payload = self.protection.encode(counts, agg_round)
        self._encode_seconds = time.perf_counter() - t0
        base = self._pending(self.party.round)
        tmp = base.with_suffix(".tmp")
        tmp.write_bytes(payload)
        tmp.replace(base.with_suffix(".bin"))
        info = {"agg_round": agg_round, "counts_sha256": _sha(counts.tobytes()), "payload_sha256": _sha(payload)}
        base.with_suffix(".json.tmp").write_text(json.dumps(info))
        base.with_suffix(".json.tmp").replace(base.with_suffix(".json"))
        self._agg_round, self._payload = agg_round, payload
        for old in self.state_dir.glob("pending-*.*"):  # keep this round's and the previous one's
            n = old.name.split(".")[0].removeprefix("pending-")
            if n.isdigit() and int(n) < self.party.round - 1:
                old.unlink(missing_ok=True)

    def start(self) -> None:
        """Genesis (round 0) or resume from the checkpoint and the persisted update of its round."""
        ckpt = self.state_dir / "checkpoint.npz"
        if not ckpt.exists():
            self.party.genesis()
            self._write_pending(0)
            save_checkpoint(ckpt, self.party, published=False)
            return
        load_checkpoint(ckpt, self.party)
        base = self._pending(self.party.round)
        try:
            info = json.loads(base.with_suffix(".json").read_text())
            payload = base.with_suffix(".bin").read_bytes()
        except (OSError, ValueError) as exc:
            raise TrainingError(f"checkpoint of round {self.party.round} has no persisted update ({exc})") from None
        if info["counts_sha256"] != _sha(self.party.own_counts().tobytes()) or info["payload_sha256"] != _sha(payload):
            raise TrainingError(f"persisted update of round {self.party.round} does not match the checkpoint")
        self._agg_round, self._payload = int(info["agg_round"]), payload
        self._load_records(self.party.round)
        self.say(f"{self.keys.party_id}: resumed at training round {self.party.round} "
                 f"({self.party.sweeps} sweeps), aggregator round {self._agg_round}")

    def submit(self) -> None:
        """Send the persisted update of the current round."""
        spent = self.party.privacy()
        rec = RoundRecord(self._agg_round, self.party.round, epsilon=None if spent is None else spent.epsilon,
                          sweep_seconds=self._sweep_seconds,
                          encode_seconds=self._encode_seconds, bytes_sent=len(self._payload))
        t0 = time.perf_counter()
        rec.accepted = self._submit(self.client, self._agg_round, self._payload)
        rec.submit_seconds = time.perf_counter() - t0
        self.records.append(rec)

    def collect(self) -> bool:
        """Wait for the aggregate, then train the next round and persist its update; False when training is done."""
        assert self.protection is not None
        rec = self.records[-1]
        try:
            total, res = self._await(self.client, self.protection, self._agg_round, rec)
        except AggregatorRejected as exc:
            if exc.code != "round_failed":
                raise
            self.say(f"{self.keys.party_id}: aggregator round {self._agg_round} failed; redoing it")
            self._write_pending(self._agg_round + 1)
            return True
        snapshot = self.party.others_from_aggregate(total, self._agg_round,
                                                    contributed=self.keys.party_id in res.contributors)
        if self.party.sweeps >= self.party.max_sweeps(self.settings.iterations):
            self.party.absorb([snapshot])
            self.final_sum = total
            return False
        self.protection.prefill(self.protection.ciphertexts_per_update)  # overlaps the Gibbs sweep
        t0 = time.perf_counter()
        self.party.train_round([snapshot])
        self._sweep_seconds = time.perf_counter() - t0
        self._write_pending(self._agg_round + 1)
        save_checkpoint(self.state_dir / "checkpoint.npz", self.party, published=False)
        self._save_records()
        return True

    def _save_records(self) -> None:
        """Every round record so far, atomically, so the summary after a resume covers the whole run."""
        path = self.state_dir / "records.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps([asdict(r) for r in self.records]))
        tmp.replace(path)

    def _load_records(self, train_round: int) -> None:
        """The records of the rounds before a restart (those whose training round precedes ``train_round``)."""
        try:
            rows = json.loads((self.state_dir / "records.json").read_text())
        except (OSError, ValueError):
            return
        self.records = [RoundRecord(**row) for row in rows if row.get("train_round", 0) < train_round]

    def run(self, on_round: Callable[[RoundRecord], None] | None = None,
            on_line: Callable[[HistoryLine], None] | None = None) -> None:
        """The whole protocol: setup, genesis or resume, rounds until ``iterations`` sweeps."""
        try:
            self.setup()
            self.start()
            while True:
                self.submit()
                more = self.collect()
                line = self._write_history(self.records[-1])
                if on_line is not None and line is not None:
                    on_line(line)
                if on_round is not None:
                    on_round(self.records[-1])
                if not more:
                    self._save_records()
                    return
        finally:
            self.close()

    def _write_history(self, rec: RoundRecord) -> HistoryLine | None:
        """The history line of the aggregator round ``rec`` (its sweeps are those trained after it)."""
        if self.history is None:
            return None
        top = None
        if rec.round % TOP_WORDS_EVERY == 0:
            top = [[self.party.corpus.vocab[w] for w in row] for row in self.party.top_words_ids(10)]
        line = HistoryLine(
            party=self.keys.party_id, algorithm=self.settings.algorithm, round=rec.round, time=time.time(),
            compute_s=rec.sweep_seconds, exchange_s=rec.encode_seconds + rec.decode_seconds,
            wait_s=rec.submit_seconds + rec.fetch_seconds, bytes_up=rec.bytes_sent, bytes_down=rec.bytes_received,
            contributors=list(rec.contributors), epsilon=rec.epsilon, quality=self.party.log_likelihood(),
            quality_name="loglik_per_token", top_words=top,
            extra={"train_round": rec.train_round, "accepted": rec.accepted, "recovery_sent": rec.recovery_sent})
        self.history.append(line)
        return line

    def close(self) -> None:
        """Release the HTTP connections and the obfuscator workers."""
        self.client.close()
        if self.protection is not None:
            self.protection.close()
