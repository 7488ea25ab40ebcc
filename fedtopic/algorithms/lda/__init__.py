"""The LDA family: centralised and stand-alone LDA, CSFed-LDA and DAFed-LDA (one party class, Eqs. 6–10), their DP releases."""
