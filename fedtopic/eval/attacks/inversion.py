"""Model inversion by the aggregator under δ-IPHE / δ-UPHE (CSFed/DAFed paper §6.4, Def. 2, Eqs. 5, 13–15).

The honest-but-curious aggregator holds the aggregate N_Σ [V,K] (Eq. 8) except
the rows of the protected (Paillier-encrypted) words H, which it cannot read.
δ-IPHE protects the ⌈δ·V⌉ most frequent words (Def. 3, Alg. 2); the paper's
contrast δ-UPHE (§8.3) protects the ⌈δ·V⌉ least frequent ones.

The inverted model (Eq. 14's reading)
--------------------------------------
Eq. 14 gives a hidden word w_f the uniform preference κ = [1/K, …, 1/K] in place
of its real preference vector φ_f = p(· | w_f). A model whose perplexity can be
measured needs p(w | k) for every word, so we turn κ into counts:

    N_in[w, k] = N_Σ[w, k]   for visible w,
    N_in[w, k] = c_w / K     for hidden w,        Φ_in = Eq. 9 applied to N_in,

with p(k | w) ∝ Φ_in[k, w]·(N_in,k + Vβ) = N_in[w, k] + β — exactly κ for every
hidden word whatever c_w is. Only the hidden word's total mass c_w is a choice;
it is what the attacker knows about that word:

* ``visible-only`` (default; the paper's "inversed model using the non-encrypted
  1 − δ data", §8.3): c_w = 0. In the protocol the aggregator never learns the
  protected words' frequencies (the ranking is computed from encrypted
  frequency vectors), so the hidden rows contribute nothing but the prior β.
* ``known-frequencies`` (a stronger attacker, reported as a bound): c_w = the
  word's true total count Σ_k N_Σ[w, k], as if the frequencies had leaked.
  The attacker then misses only the topic split of the hidden words.

At δ = 0 nothing is hidden, N_in = N_Σ and Φ_in = Φ_r bit for bit, so η = 0.

η-MP (Def. 2, Eq. 5)
--------------------
Perplexity(M_in) ≥ e^η · Perplexity(M_r); the strongest η the attack admits is
η = ln(Perplexity(M_in) / Perplexity(M_r)).

ζ for new users (Eqs. 13–15)
----------------------------
The word's preference vector is φ_j = p(k | w_j) = (N_Σ[j, k] + β) / (N_Σ[j] + Kβ)
(Eq. 9 with topic weights ∝ N_k + Vβ). A new user with word counts n_j and
length L gets θ_r = (1/L) Σ_j n_j φ_j (Eq. 13) from the real model and
θ_in = (1/L)(Σ_{j∉H} n_j φ_j + Σ_{f∈H} n_f κ) (Eq. 14) from the inverted one, so
ζ = |θ_r − θ_in|_2 = (1/L) |Σ_{f∈H} n_f (φ_f − κ)|_2 (Eq. 15; for one hidden
word, (1/L) n_f |φ_f − κ|_2 as printed).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from fedtopic.corpus.types import Corpus
from fedtopic.crypto.protect.base import ProtectionError
from fedtopic.crypto.protect.paillier_rows import protected_row_count, protected_rows
from fedtopic.crypto.protect.ranking import rank_words
from fedtopic.errors import EvalError
from fedtopic.models.distributions import phi_from_counts

Scheme = Literal["iphe", "uphe"]
AttackerKnowledge = Literal["visible-only", "known-frequencies"]
SCHEMES: tuple[Scheme, ...] = ("iphe", "uphe")
KNOWLEDGE: tuple[AttackerKnowledge, ...] = ("visible-only", "known-frequencies")


def word_frequencies(corpus: Corpus) -> np.ndarray:
    """int64[V] global count of every vocabulary word in ``corpus`` (the IPHE ranking key)."""
    return corpus.word_counts()


def protected_word_count(delta: float, n_words: int) -> int:
    """⌈δ·V⌉ words are protected at encryption ratio δ ∈ [0, 1] (Def. 3); the protocol's own count."""
    if not (0.0 <= delta <= 1.0) or math.isnan(delta):
        raise EvalError(f"encryption ratio delta must be in [0, 1], got {delta}")
    return protected_row_count(delta, n_words)


def protected_words(frequencies: np.ndarray, delta: float, scheme: Scheme) -> np.ndarray:
    """int64[⌈δV⌉] sorted indices of the words δ-IPHE (most frequent) or δ-UPHE (least frequent) encrypts.

    The protocol's own choice: its word ranking (``crypto.protect.ranking.rank_words``: most
    frequent first, ties by lower word index) and its rows (``paillier_rows.protected_rows``:
    IPHE the head of the ranking, UPHE its tail).
    """
    freq = np.asarray(frequencies)
    if freq.ndim != 1 or len(freq) == 0:
        raise EvalError("protected words: frequencies must be a non-empty 1-D array")
    protected_word_count(delta, len(freq))  # the δ check
    if scheme not in SCHEMES:
        raise EvalError(f"unknown protection scheme {scheme!r}; choose one of: {', '.join(SCHEMES)}")
    try:
        return protected_rows(rank_words(freq), delta, "top" if scheme == "iphe" else "bottom")
    except ProtectionError as exc:
        raise EvalError(f"protected words: {exc}") from None


def inverted_counts(n_sum: np.ndarray, hidden: np.ndarray, knowledge: AttackerKnowledge = "visible-only") -> np.ndarray:
    """float64[V,K] N_in: N_Σ's visible rows, and c_w/K in every hidden row (Eq. 14; see the module docstring).

    n_sum: [V,K] the aggregate N_Σ (only its visible rows — and, for
    ``known-frequencies``, the hidden rows' totals — are used).
    """
    n_sum = _check_counts(n_sum)
    hidden = _check_hidden(hidden, n_sum.shape[0])
    out = n_sum.astype(np.float64, copy=True)
    if knowledge == "visible-only":
        out[hidden] = 0.0
    elif knowledge == "known-frequencies":
        out[hidden] = out[hidden].sum(axis=1, keepdims=True) / n_sum.shape[1]
    else:
        raise EvalError(f"unknown attacker knowledge {knowledge!r}; choose one of: {', '.join(KNOWLEDGE)}")
    return out


def inverted_phi(n_sum: np.ndarray, hidden: np.ndarray, beta: float, knowledge: AttackerKnowledge = "visible-only") -> np.ndarray:
    """float64[K,V] Φ_in = Eq. 9 on N_in: the model the aggregator inverts."""
    return phi_from_counts(inverted_counts(n_sum, hidden, knowledge), beta)


def model_privacy_eta(perplexity_inverted: float, perplexity_real: float) -> float:
    """η of (η)-MP (Def. 2, Eq. 5): ln(Perplexity(M_in) / Perplexity(M_r))."""
    if not (perplexity_real > 0 and math.isfinite(perplexity_real)) or not perplexity_inverted > 0:
        raise EvalError(f"eta: perplexities must be positive (real {perplexity_real}, inverted {perplexity_inverted})")
    return math.log(perplexity_inverted / perplexity_real)


def word_preferences(n_sum: np.ndarray, beta: float) -> np.ndarray:
    """float64[V,K] φ_j = p(k | w_j) = (N_Σ[j,k] + β) / (N_Σ[j] + Kβ), the rows Eq. 13 averages."""
    n_sum = _check_counts(n_sum)
    if not beta > 0:
        raise EvalError(f"beta must be positive, got {beta}")
    rows = n_sum.astype(np.float64) + beta
    return rows / rows.sum(axis=1, keepdims=True)


def new_user_preferences(preferences: np.ndarray, users: Corpus) -> np.ndarray:
    """float64[D,K] θ_r = (1/L) Σ_j n_j φ_j per user (Eq. 13); every user needs L ≥ 1 words."""
    lengths = users.doc_lengths()
    if users.n_docs == 0 or (lengths < 1).any():
        raise EvalError("Eq. 13: every new user needs at least one word")
    if preferences.shape[0] != users.n_words:
        raise EvalError(f"Eq. 13: users' vocabulary has {users.n_words} words, preferences have {preferences.shape[0]}")
    sums = np.add.reduceat(preferences[users.words], users.doc_ptr[:-1], axis=0)
    return sums / lengths[:, None]


def inverted_preferences(preferences: np.ndarray, hidden: np.ndarray) -> np.ndarray:
    """float64[V,K] the attacker's φ: real rows for visible words, κ = [1/K…] for hidden ones (Eq. 14)."""
    hidden = _check_hidden(hidden, preferences.shape[0])
    out = preferences.copy()
    out[hidden] = 1.0 / preferences.shape[1]
    return out


def zeta_direct(preferences: np.ndarray, hidden: np.ndarray, users: Corpus) -> np.ndarray:
    """float64[D] ζ = |θ_r − θ_in|_2 per new user, computing both θ's (Eqs. 13, 14)."""
    real = new_user_preferences(preferences, users)
    inverted = new_user_preferences(inverted_preferences(preferences, hidden), users)
    return np.linalg.norm(real - inverted, axis=1)


def zeta_eq15(preferences: np.ndarray, hidden: np.ndarray, users: Corpus) -> np.ndarray:
    """float64[D] ζ = (1/L) |Σ_{f∈H} n_f (φ_f − κ)|_2 per new user (Eq. 15), from the hidden words alone."""
    hidden = _check_hidden(hidden, preferences.shape[0])
    lengths = users.doc_lengths()
    if users.n_docs == 0 or (lengths < 1).any():
        raise EvalError("Eq. 15: every new user needs at least one word")
    n_topics = preferences.shape[1]
    deviation = np.zeros_like(preferences)
    deviation[hidden] = preferences[hidden] - 1.0 / n_topics
    counts = np.zeros((users.n_docs, len(hidden)))  # n_f per user and hidden word
    column = np.full(preferences.shape[0], -1, dtype=np.int64)
    column[hidden] = np.arange(len(hidden))
    token_col = column[users.words]
    is_hidden = token_col >= 0
    np.add.at(counts, (users.doc_ids()[is_hidden], token_col[is_hidden]), 1.0)
    return np.linalg.norm(counts @ deviation[hidden], axis=1) / lengths


def _check_counts(n_sum: np.ndarray) -> np.ndarray:
    n_sum = np.asarray(n_sum)
    if n_sum.ndim != 2 or n_sum.shape[0] < 1 or n_sum.shape[1] < 1:
        raise EvalError(f"N_Σ must be a non-empty [V,K] matrix, got shape {n_sum.shape}")
    if not np.all(np.isfinite(n_sum)) or (n_sum < 0).any():
        raise EvalError("N_Σ has negative or non-finite counts")
    return n_sum


def _check_hidden(hidden: np.ndarray, n_words: int) -> np.ndarray:
    hidden = np.asarray(hidden, dtype=np.int64)
    if hidden.ndim != 1:
        raise EvalError("hidden words must be a 1-D array of word indices")
    if len(hidden) and (hidden.min() < 0 or hidden.max() >= n_words):
        raise EvalError(f"hidden word index outside [0, {n_words})")
    if len(np.unique(hidden)) != len(hidden):
        raise EvalError("hidden word indices must be distinct")
    return hidden
