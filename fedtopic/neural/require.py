"""One clear error when the ``neural`` extra is missing, and torch's thread count.

torch's intra-op thread pool defaults to one thread per core. Our tensors are small (a batch of 32-64
documents), parties of a simulation already run as threads, and the machine may be shared: measured on the
2-core machine with another job running, a FedNMF+MI step took 54 ms with one thread and 134 ms with two, a
ProdLDA step 45 ms and 878 ms. So the first ``require_torch`` sets one thread unless ``FEDTOPIC_TORCH_THREADS``
says otherwise.
"""

from __future__ import annotations

import os
from types import ModuleType

from fedtopic.errors import ConfigError

TORCH_PIN = "torch==2.13.0"


def require_torch(what: str) -> ModuleType:
    """The torch module, or a ConfigError saying that ``what`` needs ``pip install 'fedtopic[neural]'``."""
    try:
        import torch
    except ImportError:
        raise ConfigError(f"{what} needs the neural extra ({TORCH_PIN}): pip install 'fedtopic[neural]'") from None
    global _threads_set
    if not _threads_set:
        raw = os.environ.get("FEDTOPIC_TORCH_THREADS", "1")
        if not raw.isdigit() or int(raw) < 1:
            raise ConfigError(f"FEDTOPIC_TORCH_THREADS must be a positive integer, got {raw!r}")
        torch.set_num_threads(int(raw))
        _threads_set = True
    return torch


_threads_set = False
