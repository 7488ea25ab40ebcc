"""Errors of ``fedtopic.crypto`` beyond the root tree in ``fedtopic.errors``."""

from fedtopic.errors import CryptoError, DecryptionError

__all__ = ["CodecError", "CryptoError", "DecryptionError"]


class CodecError(CryptoError):
    """A payload cannot be encoded or decoded (bad header, shape, counts, size)."""
