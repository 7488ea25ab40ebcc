"""fedtopic: federated topic modelling for consortia whose documents never leave their owners.

``fedtopic.train``, ``fedtopic.simulate``, ``fedtopic.load``, ``fedtopic.TopicModel`` (and ``SimulationRun``,
``RoundInfo``) are the Python API
(``fedtopic.api``), imported on first use so that ``import fedtopic`` stays cheap.
"""

from typing import Any

from fedtopic.version import __version__

__all__ = ["__version__", "train", "simulate", "load", "TopicModel", "SimulationRun", "RoundInfo"]

_API = ("train", "simulate", "load", "TopicModel", "SimulationRun", "RoundInfo")


def __dir__() -> list[str]:
    """The API beside the module's own names (``dir(fedtopic)``), though it is imported on first use."""
    return sorted(set(globals()) | set(_API))


def __getattr__(name: str) -> Any:
    if name in _API:
        from fedtopic import api

        return getattr(api, name)
    raise AttributeError(f"module 'fedtopic' has no attribute {name!r}")
