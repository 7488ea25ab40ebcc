"""SUB-LDA (Huang & Chen): differentially private collapsed Gibbs with Poisson subsampling."""
