"""The NMF family's centralised run (`train`): its run folder (``algorithms.nmf.run_folder``) after the fit."""

from __future__ import annotations

from typing import Any

from fedtopic.algorithms.one_fit_writer import OneFitWriter


class NMFTrainWriter(OneFitWriter):
    """``TrainWriter`` of the NMF family, a mixin of its centralised algorithms."""

    def write_run(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        from fedtopic.algorithms.nmf.run_folder import write_nmf_run

        return write_nmf_run(*args, **kwargs)
