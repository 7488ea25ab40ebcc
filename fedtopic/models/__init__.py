"""fedtopic.models: numba collapsed-Gibbs LDA (pure computation on arrays; no I/O)."""

from fedtopic.models.distributions import phi_from_counts, theta_from_counts
from fedtopic.models.gibbs import sweep
from fedtopic.models.lda import GibbsLDA
from fedtopic.models.state import LDAState, counts_from_z, init_state

__all__ = ["GibbsLDA", "LDAState", "counts_from_z", "init_state", "phi_from_counts", "sweep", "theta_from_counts"]
