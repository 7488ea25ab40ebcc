"""Raw-text corpora with two clear themes, written as a party's own JSON-lines file (numpy only)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

THEMES = {
    "sport": "football match goal team league coach player stadium season striker keeper referee".split(),
    "money": "bank market stock price trader dividend inflation bond investor profit credit budget".split(),
}


def theme_texts(n_docs: int, seed: int, length: int = 8, sentence_length: int | None = None) -> list[str]:
    """Documents mixing the two themes, each mostly one of them; with ``sentence_length``, written as sentences
    of that many words ("... . ..."), each sentence on one theme (SentenceLDA's generative story)."""
    rng = np.random.default_rng(seed)
    names = list(THEMES)
    docs = []
    for _ in range(n_docs):
        main = names[rng.integers(2)]
        if sentence_length is None:
            words = [rng.choice(THEMES[main if rng.random() < 0.85 else names[1 - names.index(main)]])
                     for _ in range(length)]
            docs.append(" ".join(words))
            continue
        sentences = []
        for _ in range(max(1, length // sentence_length)):
            theme = main if rng.random() < 0.85 else names[1 - names.index(main)]
            sentences.append(" ".join(rng.choice(THEMES[theme]) for _ in range(sentence_length)).capitalize() + ".")
        docs.append(" ".join(sentences))
    return docs


def write_jsonl(path: Path, texts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts), encoding="utf-8")
    return path
