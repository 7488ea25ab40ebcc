"""A party's side of the consortium's secrets: join a session whose params carry them, sealed by the launcher.

Secrets (paper §6.1 step 1): the launching party (first in the consortium file) makes the protection's secrets
(``Protection.new_secrets``: the Paillier key pair of ``aggregator.key_bits``, the mask secret, or a plugin's) and
seals them for every party's X25519 key, itself included; the sealed blobs travel as the setup session's params,
so the aggregator only stores opaque bytes it cannot open, and a restarted launcher reads its own back. What the
secrets are and how they are sealed is the protection's (``fedtopic.protections``); joining the session is here.

Sealing needs only public keys, so the launcher also signs the whole session (combiner, meta, params, sealed
blobs included: ``crypto.setup_signature``), and every party, the restarted launcher too, checks that signature
against the launcher's address in its own consortium.toml before it opens anything: an aggregator that swaps a
sealed secret, edits the meta or opens the session itself stops the party in one line, before any update leaves.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fedtopic.crypto.keys import PartyKeys
from fedtopic.crypto.setup_signature import SIGNATURE_PARAM, setup_signed_by, sign_setup
from fedtopic.errors import (
    AggregatorMisbehaved,
    ConfigError,
    CryptoError,
    TrainingError,
)
from fedtopic.network.client import AggregatorClient
from fedtopic.network.errors import AggregatorRejected
from fedtopic.protections import Protection, Secrets


def open_secrets(protection: Protection, meta: Mapping[str, Any], params: Mapping[str, Any], party_id: str,
                 x25519_private: bytes, session: str, key_bits: int) -> Secrets:
    """This party's secrets from the setup session (checked against its public key / commitment); one line when the
    session carries none for it or they are malformed."""
    try:
        return protection.open_secrets(meta, params, party_id, x25519_private, session, key_bits)
    except KeyError:
        raise ConfigError(f"setup session {session!r} carries no sealed secret for party {party_id!r}") from None
    except ValueError:
        raise CryptoError(f"setup session {session!r}: a sealed secret is not hex") from None


def sealed_session(client: AggregatorClient, ids: Sequence[str], keys: PartyKeys, publics: Sequence[bytes], *,
                   launcher: str, protection: Protection, key_bits: int, params: Mapping[str, Any], timeout: float,
                   spec: Callable[[Secrets], tuple[str, dict[str, Any]]]) -> Secrets:
    """Join ``client``'s session, whose params carry the consortium's secrets sealed for every party (§6.1 step 1).

    The launcher (first of ``ids``) makes fresh secrets for ``protection`` and opens the session with the
    combiner and meta ``spec(secrets)`` gives and ``params`` plus the sealed blobs (a restarted launcher finds
    its session and opens its own copy). The others wait for it (up to ``timeout`` s), open their copy, and
    check that the session's meta and params are the ones they derive: another consortium, vocabulary or option
    is refused in one line naming what differs. ``launcher``: the first party's address, from this party's own
    consortium.toml: a session it did not sign is AggregatorMisbehaved before anything in it is opened."""
    index = list(ids).index(keys.party_id)
    until = time.monotonic() + timeout
    while True:
        try:
            info = client.session_info()
            break
        except AggregatorRejected as exc:
            if exc.code != "unknown_session":
                raise
        if index == 0:
            secrets = protection.new_secrets(key_bits)
            combiner, meta = spec(secrets)
            full = dict(params) | protection.sealed_params(secrets, dict(zip(ids, publics)), client.session)
            full[SIGNATURE_PARAM] = sign_setup(keys.eth_private_key, client.session, combiner, meta, full)
            client.open_session(ids, combiner=combiner, meta=meta, params=full)
            return secrets
        if time.monotonic() > until:
            raise TrainingError(f"session {client.session!r} was not opened by {ids[0]} within {timeout:.0f} s")
        time.sleep(0.2)
    if not setup_signed_by(launcher, client.session, info.combiner, info.meta, info.params):
        raise AggregatorMisbehaved(
            f"{keys.party_id}: setup session {client.session!r} at {client.url} is not signed by the launcher "
            f"{ids[0]} ({launcher}): the aggregator changed its secrets, meta or params, or opened it itself "
            "(or the launcher runs an older fedtopic); stopped before using any of it")
    secrets = open_secrets(protection, info.meta, info.params, keys.party_id, keys.x25519_private_key,
                           client.session, key_bits)
    differ = sorted(k for k, v in params.items() if info.params.get(k) != v)
    if spec(secrets)[1] != info.meta or differ:
        what = ", ".join(f"{k} {info.params.get(k)!r} (this party: {params[k]!r})" for k in differ) or "its meta"
        sealed = {k: v for k, v in info.params.items() if k not in params}
        try:  # asked with our own params, the aggregator records the refusal: the others stop instead of waiting
            client.open_session(ids, combiner=info.combiner, meta=spec(secrets)[1], params=dict(params) | sealed,
                                straggler_deadline_seconds=info.straggler_deadline_seconds)
        except AggregatorRejected as exc:
            if exc.code != "session_conflict":
                raise
        raise ConfigError(f"session {client.session!r} was opened by {info.created_by} with other settings: {what} "
                          "(if this is a new run of the consortium, start every node with `node run --fresh`)")
    return secrets
