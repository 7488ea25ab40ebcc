"""Protection of CSFed updates N_p before they reach the aggregator (paper §6.2–6.4, Def. 3, Alg. 2).

``PROTECTIONS`` maps ``aggregator.protection`` to its scheme object; each one is
also the aggregator's combiner for that name (``check_meta``, ``validate``,
``combine``: no secrets, no I/O).
"""

from fedtopic.crypto.protect.adapter import CombinerAdapter
from fedtopic.crypto.protect.base import (
    InvalidUpdate,
    ProtectionContext,
    ProtectionError,
    ProtectionScheme,
    RecoveryNeeded,
    RoundInfo,
    RoundView,
)
from fedtopic.crypto.protect.fastpaillier import ObfuscatorPool, decrypt_parallel
from fedtopic.crypto.protect.keyshare import (
    new_mask_secret,
    open_for_reader,
    receive_mask_secret,
    receive_paillier_secret,
    seal_for_reader,
    share_mask_secret,
    share_paillier_secret,
)
from fedtopic.crypto.protect.mask import MASK, MaskScheme
from fedtopic.crypto.protect.paillier_rows import (
    IPHE,
    PACKED,
    UPHE,
    PaillierRowsScheme,
    protected_rows,
)
from fedtopic.crypto.protect.plain import PlainScheme
from fedtopic.crypto.protect.ranking import (
    decode_word_frequencies,
    encode_word_frequencies,
    rank_words,
    ranking_meta,
)

PROTECTIONS: dict[str, ProtectionScheme] = {s.name: s for s in (PlainScheme(), IPHE, UPHE, PACKED, MASK)}


def mask_recovery(dropped: list[int], ctx: ProtectionContext) -> bytes:
    """A surviving party's second message after ``RecoveryNeeded`` (see ``mask``)."""
    return MASK.mask_recovery(dropped, ctx)


__all__ = [
    "CombinerAdapter", "IPHE", "MASK", "PACKED", "PROTECTIONS", "UPHE", "InvalidUpdate", "MaskScheme", "ObfuscatorPool",
    "PaillierRowsScheme", "PlainScheme", "ProtectionContext", "ProtectionError", "ProtectionScheme",
    "RecoveryNeeded", "RoundInfo", "RoundView", "decode_word_frequencies", "decrypt_parallel",
    "encode_word_frequencies", "mask_recovery", "new_mask_secret", "open_for_reader", "protected_rows",
    "rank_words", "ranking_meta", "receive_mask_secret", "receive_paillier_secret", "seal_for_reader",
    "share_mask_secret", "share_paillier_secret",
]  # fmt: skip
