"""NMF topic models for short texts: centralised NMF (scikit-learn) and NMF by SGD ± SMILE (FedNMF+MI paper)."""
