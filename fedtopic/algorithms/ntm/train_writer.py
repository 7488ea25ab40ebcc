"""The NTM family's centralised run (`train`): its run folder (``algorithms.ntm.run_folder``) after the fit."""

from __future__ import annotations

from typing import Any

from fedtopic.algorithms.one_fit_writer import OneFitWriter


class NTMTrainWriter(OneFitWriter):
    """``TrainWriter`` of the NTM family, a mixin of its centralised algorithms."""

    def write_run(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        from fedtopic.algorithms.ntm.run_folder import write_ntm_run

        return write_ntm_run(*args, **kwargs)
