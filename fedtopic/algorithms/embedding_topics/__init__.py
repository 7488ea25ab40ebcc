"""``fed-embedding-topics``: BERTopic's approach (embed, cluster, class-based TF-IDF) across parties that keep
their documents and their embeddings; every exchange a sum under the consortium's protection (docs/algorithms.md).
"""
