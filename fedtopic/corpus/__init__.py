"""fedtopic.corpus: reading, tokenising, vocabularies, partitioning, built-in and synthetic datasets."""

from fedtopic.corpus.build import corpus_from_texts, corpus_from_tokens
from fedtopic.corpus.datasets import (
    Dataset,
    DatasetInfo,
    fetch_dataset,
    list_datasets,
    load_dataset,
)
from fedtopic.corpus.partition import partition_documents, split_train_test
from fedtopic.corpus.readers import read_corpus
from fedtopic.corpus.store import load_corpus, save_corpus
from fedtopic.corpus.synthetic import SyntheticData, generate_synthetic
from fedtopic.corpus.tokenize import Tokenizer
from fedtopic.corpus.types import Corpus
from fedtopic.corpus.vocabulary import Vocabulary

__all__ = [
    "Corpus", "Dataset", "DatasetInfo", "SyntheticData", "Tokenizer", "Vocabulary",
    "corpus_from_texts", "corpus_from_tokens", "fetch_dataset", "generate_synthetic",
    "list_datasets", "load_corpus", "load_dataset", "partition_documents", "read_corpus",
    "save_corpus", "split_train_test",
]
