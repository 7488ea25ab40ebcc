"""The per-round figures of a federated run: every party named up to LEGEND_PARTIES, beyond that a median line
and one legend entry for all parties, so the legend never covers the axes."""

from __future__ import annotations

import warnings

import matplotlib.image as mpimg
import numpy as np
import pytest

from fedtopic.eval.history_plots import LEGEND_PARTIES, plot_history


def _histories(n_parties: int, rounds: int = 6) -> dict[str, list[dict]]:
    rng = np.random.default_rng(n_parties)
    return {f"p{i}": [{"round": r, "quality": float(-8 + r * 0.1 + rng.normal(0, 0.05)), "compute_s": 0.1,
                       "exchange_s": 0.02, "wait_s": 0.01} for r in range(1, rounds + 1)]
            for i in range(n_parties)}


@pytest.mark.parametrize("n_parties", [3, LEGEND_PARTIES + 1, 64])
def test_quality_legend_stays_small_whatever_the_number_of_parties(tmp_path, monkeypatch, n_parties):
    from fedtopic.eval import plots

    legends = []
    real = plots.pyplot

    def spying():
        plt = real()
        original = plt.subplots

        def subplots(*args, **kwargs):
            fig, ax = original(*args, **kwargs)
            legends.append(ax)
            return fig, ax

        monkeypatch.setattr(plt, "subplots", subplots)
        return plt

    monkeypatch.setattr("fedtopic.eval.history_plots.pyplot", spying)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "Tight layout not applied" when a legend overflows
        written = plot_history(tmp_path, _histories(n_parties), title="csfed-lda")
    assert [p.name for p in written] == ["quality.png", "round_time.png"]
    assert all(mpimg.imread(p).shape[:2] == (495, 770) for p in written)
    names = [t.get_text() for t in legends[0].get_legend().get_texts()]
    if n_parties <= LEGEND_PARTIES:
        assert names == [f"p{i}" for i in range(n_parties)]
    else:
        assert names == [f"median of {n_parties} parties", "each party"]
        median = legends[0].get_lines()[n_parties]
        per_round = np.array([[h["quality"] for h in rows] for rows in _histories(n_parties).values()])
        np.testing.assert_allclose(median.get_ydata(), np.median(per_round, axis=0))
