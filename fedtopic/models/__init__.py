"""fedtopic.models: numba collapsed-Gibbs LDA (pure computation on arrays; no I/O).

The names below load their modules on first use (PEP 562), so that importing a light module of the package
(``models.prior``: what α is, used by the evaluation, the run folders and the Python API's ``TopicModel``) does
not compile or load numba.
"""

from importlib import import_module
from typing import Any

_HOMES = {"GibbsLDA": "lda", "LDAState": "state", "counts_from_z": "state", "init_state": "state",
          "phi_from_counts": "distributions", "sweep": "gibbs", "theta_from_counts": "distributions"}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
