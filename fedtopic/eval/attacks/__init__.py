"""Attack analyses of the CSFed/DAFed paper: reconstruction (§5.2) and model inversion (§6.4)."""

from fedtopic.eval.attacks.inversion import (
    AttackerKnowledge,
    Scheme,
    inverted_counts,
    inverted_phi,
    inverted_preferences,
    model_privacy_eta,
    new_user_preferences,
    protected_word_count,
    protected_words,
    word_frequencies,
    word_preferences,
    zeta_direct,
    zeta_eq15,
)
from fedtopic.eval.attacks.reconstruction import (
    log_binomial,
    log_full_reconstruction_probability,
    log_partial_reconstruction_probability,
    satisfies_up,
    up_epsilon,
)

__all__ = [
    "AttackerKnowledge",
    "Scheme",
    "inverted_counts",
    "inverted_phi",
    "inverted_preferences",
    "log_binomial",
    "log_full_reconstruction_probability",
    "log_partial_reconstruction_probability",
    "model_privacy_eta",
    "new_user_preferences",
    "protected_word_count",
    "protected_words",
    "satisfies_up",
    "up_epsilon",
    "word_frequencies",
    "word_preferences",
    "zeta_direct",
    "zeta_eq15",
]
