"""iFTM (Jiang et al.): private MH LDA and SentenceLDA parties and the master that merges their topics."""
