"""One clear error when the ``neural`` extra is missing."""

from __future__ import annotations

from types import ModuleType

from fedtopic.errors import ConfigError

TORCH_PIN = "torch==2.13.0"


def require_torch(what: str) -> ModuleType:
    """The torch module, or a ConfigError saying that ``what`` needs ``pip install 'fedtopic[neural]'``."""
    try:
        import torch
    except ImportError:
        raise ConfigError(f"{what} needs the neural extra ({TORCH_PIN}): pip install 'fedtopic[neural]'") from None
    return torch
