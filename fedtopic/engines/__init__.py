"""Engines as one layer: where a simulation's parties run (``base.Engine``), found by name in ``registry``."""

from fedtopic.engines.base import Engine
from fedtopic.engines.registry import engine_names, get_engine

__all__ = ["Engine", "engine_names", "get_engine"]
