"""Differential privacy: the Rényi-DP accountant (SUB-LDA Eq. 3), conversions to (ε, δ), and SUB-LDA's
efficiency-privacy analysis (Eqs. 5–6, Lemma 4.1, Lemma 5.1). Pure numpy; no model code."""
