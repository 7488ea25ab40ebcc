"""The options every training command shares: ``--algorithm`` and repeated ``--opt key=value``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from fedtopic.algorithms.base import Algorithm, Mode, TrainSpec

OptOption = Annotated[
    list[str],
    typer.Option("--opt", metavar="KEY=VALUE",
                 help="an option of the algorithm (repeatable); `fedtopic algorithms` lists each one's options"),
]


def resolve(name: str, mode: Mode, command: str, topics: int, iterations: int, seed: int,
            opts: Sequence[str]) -> tuple[Algorithm, TrainSpec]:
    """The registered algorithm ``name`` (which must run in ``mode``) and its validated spec."""
    from fedtopic.algorithms.base import parse_opt_pairs
    from fedtopic.algorithms.registry import get_algorithm

    algorithm = get_algorithm(name)
    algorithm.require(mode, command)
    spec = algorithm.spec(topics, iterations, seed, parse_opt_pairs(opts))
    algorithm.check_mode_options(spec, mode)
    return algorithm, spec
