"""Neural topic models centralised: ProdLDA and CombinedTM, their options and run folder."""
