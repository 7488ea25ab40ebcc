"""The token store (`fedtopic data build`): what it holds equals `read_corpus` of the same source, whatever the
pieces and workers; the samplers give the same chain on its narrow, memory-mapped words; damage and mismatched
options are one line; train, simulate and a node's corpus take it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedtopic.cli.main import main
from fedtopic.corpus import store_build
from fedtopic.corpus.readers import read_corpus
from fedtopic.corpus.reading import CorpusReading
from fedtopic.corpus.token_store import open_store
from fedtopic.corpus.types import Corpus
from fedtopic.corpus.vocabulary import Vocabulary
from fedtopic.errors import CorpusError
from fedtopic.models.gibbs import sweep
from fedtopic.models.state import init_state

WORDS = ["match", "goal", "Goal", "stadium", "café", "CAFÉ", "naïve", "über", "straße", "the", "and", "a", "x",
         "market", "price", "price2", "snake_case", "don't", "e-mail", "日本", "москва", "ΣΟΦΙΑ", "coffee", "cake"]
SEPARATORS = [" ", "  ", ", ", ". ", "!\n", "\t", " — ", "\"", "(", ")", "3", "_"]


@st.composite
def documents(draw) -> list[dict | None]:
    """JSON lines rows (None: a blank line) with texts of mixed scripts, case, digits and punctuation."""
    rows = []
    for i in range(draw(st.integers(1, 40))):
        if draw(st.integers(0, 9)) == 0:
            rows.append(None)
            continue
        n = draw(st.integers(0, 25))
        text = "".join(draw(st.sampled_from(WORDS)) + draw(st.sampled_from(SEPARATORS)) for _ in range(n))
        row: dict = {"text": text}
        if draw(st.booleans()):
            row["label"] = draw(st.sampled_from(["sport", "food", 7]))
        if draw(st.integers(0, 3)) == 0:
            row["id"] = f"doc-{i}"
        rows.append(row)
    return rows


def _write_jsonl(path: Path, rows: list[dict | None]) -> Path:
    path.write_text("".join("\n" if r is None else json.dumps(r, ensure_ascii=bool(i % 2)) + "\n"
                            for i, r in enumerate(rows)), encoding="utf-8")
    return path


def _same(a: Corpus, b: Corpus) -> None:
    assert a.vocab == b.vocab
    assert np.array_equal(a.words, b.words) and np.array_equal(a.doc_ptr, b.doc_ptr)
    assert a.doc_names == b.doc_names and a.label_names == b.label_names
    assert (a.labels is None) == (b.labels is None) and (a.labels is None or np.array_equal(a.labels, b.labels))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=documents(), piece=st.sampled_from([40, 300, 1 << 20]), workers=st.sampled_from([1, 2]),
       reading=st.sampled_from([CorpusReading(min_df=1, max_df=1.0, stopwords="none"),
                                CorpusReading(min_df=1, max_df=0.9), CorpusReading(min_df=2, max_df=0.5)]))
def test_the_store_holds_what_read_corpus_reads(tmp_path_factory, monkeypatch, rows, piece, workers, reading):
    folder = tmp_path_factory.mktemp("store")
    source = _write_jsonl(folder / "docs.jsonl", rows)
    monkeypatch.setattr(store_build, "CHUNK_BYTES", piece)
    try:
        expected = read_corpus(source, **reading.options())
    except CorpusError as exc:  # nothing left, or no documents: the same error from the store
        with pytest.raises(CorpusError) as built:
            store_build.build_store(source, folder / "s", reading=reading, workers=workers)
        assert str(built.value).split(":")[-1] == str(exc).split(":")[-1]
        assert not (folder / "s").exists() and [p.name for p in folder.iterdir()] == ["docs.jsonl"]
        return
    report = store_build.build_store(source, folder / "s", reading=reading, workers=workers)
    store = open_store(folder / "s")
    _same(store, expected)
    assert store.words.dtype == np.uint16 and isinstance(store.words, np.memmap)
    assert (report.documents, report.tokens, report.vocabulary) == (store.n_docs, store.n_tokens, store.n_words)


def test_a_folder_of_text_files_with_label_folders(tmp_path, monkeypatch):
    monkeypatch.setattr(store_build, "CHUNK_BYTES", 64)
    root = tmp_path / "docs"
    for i in range(12):
        folder = root / ("sport" if i % 2 else "food")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i}.txt").write_text(f"Goal {i} in the match; café and cake, goal! stadium crowd naïve",
                                         encoding="utf-8")
    store_build.build_store(root, tmp_path / "s", reading=CorpusReading(max_df=1.0), workers=2)
    _same(open_store(tmp_path / "s"), read_corpus(root, max_df=1.0))
    assert open_store(tmp_path / "s").label_names == ("food", "sport")


def test_a_bad_line_names_its_line_in_the_whole_file_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(store_build, "CHUNK_BYTES", 100)
    lines = [json.dumps({"text": f"goal match number {i}"}) for i in range(60)]
    lines[47] = '{"text": "unterminated'
    source = tmp_path / "d.jsonl"
    source.write_text("\n".join(lines) + "\n")
    with pytest.raises(CorpusError, match=r"d\.jsonl line 48: not valid JSON"):
        store_build.build_store(source, tmp_path / "s", workers=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl"]


def test_a_damaged_store_and_other_options_are_one_line(tmp_path, capsys):
    source = _write_jsonl(tmp_path / "d.jsonl", [{"text": f"goal match café stadium {w}"} for w in WORDS * 3])
    assert main(["data", "build", str(source), "--out", str(tmp_path / "s"), "--max-df", "1.0"]) == 0
    assert "bytes a token on disk" in capsys.readouterr().out
    assert main(["data", "build", str(source), "--out", str(tmp_path / "s")]) != 0
    assert "exists; give --overwrite" in capsys.readouterr().err
    with pytest.raises(CorpusError, match="built with min_df 2, max_df 1.0; asked for min_df 1, max_df 1.0"):
        read_corpus(tmp_path / "s", min_df=1, max_df=1.0)
    with pytest.raises(CorpusError, match="other stop words"):
        read_corpus(tmp_path / "s", **CorpusReading(stopwords="none", max_df=1.0).options())
    words = tmp_path / "s" / "words.bin"
    words.write_bytes(words.read_bytes()[:-2])
    with pytest.raises(CorpusError, match=r"words\.bin holds \d+ bytes, store\.json says \d+ \(rebuild the store\)"):
        open_store(tmp_path / "s")
    capsys.readouterr()
    assert main(["train", "--corpus", str(tmp_path / "s"), "--max-df", "1.0", "-k", "2", "--iterations", "2",
                 "--out", str(tmp_path / "run")]) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "rebuild the store" in err and "Traceback" not in err


@pytest.mark.parametrize("sampler,threads", [("dense", 1), ("dense", 2), ("mh", 1), ("sparse", 2)])
def test_the_samplers_run_the_same_chain_on_narrow_words(sampler, threads):
    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 40, 300)
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    wide = rng.integers(0, 500, int(doc_ptr[-1])).astype(np.int32)
    narrow = wide.astype(np.uint16)
    states = [init_state(w, doc_ptr, 500, 12, seed=3) for w in (wide, narrow)]
    assert states[0].z.dtype == np.uint16
    for state, words in zip(states, (wide, narrow)):
        for _ in range(3):
            sweep(state, words, doc_ptr, 0.1, 0.01, sampler=sampler, threads=threads)
    assert np.array_equal(states[0].z, states[1].z) and np.array_equal(states[0].n_wk, states[1].n_wk)


def test_train_and_simulate_take_a_store_and_a_node_reads_it_in_the_consortium_words(tmp_path, capsys):
    rows = [{"text": " ".join(np.random.default_rng(i).choice(WORDS[:9] + WORDS[13:], 12)), "label": str(i % 2)}
            for i in range(80)]
    source = _write_jsonl(tmp_path / "d.jsonl", rows)
    store = tmp_path / "s"
    assert main(["data", "build", str(source), "--out", str(store), "--min-df", "1", "--max-df", "1.0",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == read_corpus(source, min_df=1, max_df=1.0).n_tokens
    common = ["--corpus", str(store), "--min-df", "1", "--max-df", "1.0", "-k", "3", "--iterations", "4",
              "--format", "json"]
    assert main(["train", *common, "--out", str(tmp_path / "t1")]) == 0
    trained = json.loads(capsys.readouterr().out)
    assert main(["train", "--corpus", str(source), *common[2:], "--out", str(tmp_path / "t2")]) == 0
    from_text = json.loads(capsys.readouterr().out)
    assert trained["perplexity"] == from_text["perplexity"] and trained["train_tokens"] == from_text["train_tokens"]
    assert np.array_equal(np.load(tmp_path / "t1" / "model.npz")["phi"], np.load(tmp_path / "t2" / "model.npz")["phi"])
    assert main(["simulate", "--algorithm", "csfed-lda", "--parties", "2", *common, "--out", str(tmp_path / "sim")]) == 0
    simulated = json.loads(capsys.readouterr().out)
    assert simulated["parties_hold_same_phi"] and np.isfinite(simulated["perplexity"])
    consortium = Vocabulary(["goal", "match", "nothere"])
    party = read_corpus(store, vocabulary=consortium)
    assert party.vocab == consortium.words and party.n_tokens == int(np.isin(
        np.array(open_store(store).vocab)[open_store(store).words], ["goal", "match"]).sum())


def test_the_word_table_numbers_words_as_a_dict_does_through_every_growth():
    """The kernel's table against a dict: first-seen ids, document frequencies and lengths, over enough distinct
    words and bytes that the slots, the arena, the word arrays and the id buffer all grow (and rehash)."""
    from fedtopic.corpus._word_table import WordTable

    rng = np.random.default_rng(11)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, rng.integers(1, 16))) for _ in range(200_000)]
    parts, presplit = [], []
    for d in range(1000):
        words = [vocab[i] for i in rng.integers(0, len(vocab), rng.integers(0, 600))]
        split = bool(d % 3 == 0)
        sep = " " if split else rng.choice([" ", ", ", "1", "_", "-"])
        parts.append(sep.join(words).encode("ascii"))
        presplit.append(split)
    table = WordTable()
    ids, lengths = table.tokenise(parts, presplit)
    index: dict[str, int] = {}
    expected_ids, expected_lengths, df = [], [], {}
    for part, split in zip(parts, presplit):
        text = part.decode("ascii")
        tokens = text.split(" ") if split else __import__("re").findall("[a-z]+", text)
        tokens = [t for t in tokens if t]
        expected_lengths.append(len(tokens))
        for t in tokens:
            expected_ids.append(index.setdefault(t, len(index)))
        for t in set(tokens):
            df[t] = df.get(t, 0) + 1
    assert len(table.slots) > 1 << 16 and len(table.arena) > 1 << 20  # the growth paths ran
    assert table.words() == list(index)
    assert np.array_equal(ids, expected_ids) and np.array_equal(lengths, expected_lengths)
    assert np.array_equal(table.df[:len(index)], [df[w] for w in index])


def test_sentence_lda_refuses_a_store_in_one_line(tmp_path, capsys):
    source = _write_jsonl(tmp_path / "d.jsonl", [{"text": f"The goal came late. The match ended {w}."}
                                                 for w in WORDS * 3])
    assert main(["data", "build", str(source), "--out", str(tmp_path / "s"), "--max-df", "1.0"]) == 0
    capsys.readouterr()
    assert main(["simulate", "--algorithm", "iftm-sentencelda", "--corpus", str(tmp_path / "s"), "--max-df", "1.0",
                 "--parties", "2", "-k", "2", "--iterations", "2", "--out", str(tmp_path / "run")]) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "token stores have no sentences" in err


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=documents(), min_df=st.integers(1, 4), max_df=st.sampled_from([1.0, 0.6, 0.3]),
       stopwords=st.sampled_from(["english", "none"]))
def test_a_store_of_every_word_serves_any_stricter_reading(tmp_path_factory, rows, min_df, max_df, stopwords):
    folder = tmp_path_factory.mktemp("recut")
    source = _write_jsonl(folder / "docs.jsonl", rows)
    everything = CorpusReading(min_df=1, max_df=1.0, stopwords=stopwords)
    asked = CorpusReading(min_df=min_df, max_df=max_df, stopwords=stopwords)
    try:
        store_build.build_store(source, folder / "s", reading=everything, workers=1)
    except CorpusError:
        return  # nothing to read at all: the other test covers the error
    try:
        expected = read_corpus(source, **asked.options())
    except CorpusError as exc:
        with pytest.raises(CorpusError) as got:
            read_corpus(folder / "s", **asked.options())
        assert "corpus is empty after tokenising" in str(exc) and "corpus is empty after tokenising" in str(got.value)
        return
    _same(read_corpus(folder / "s", **asked.options()), expected)


def test_a_looser_reading_than_the_store_is_refused(tmp_path):
    source = _write_jsonl(tmp_path / "d.jsonl", [{"text": f"goal match café stadium {w}"} for w in WORDS * 3])
    store_build.build_store(source, tmp_path / "s", reading=CorpusReading(min_df=3, max_df=0.9))
    with pytest.raises(CorpusError, match=r"built with min_df 3, max_df 0.9; asked for min_df 2, max_df 0.9.*"
                                          r"--min-df 1 --max-df 1.0, which serves any reading"):
        read_corpus(tmp_path / "s", min_df=2, max_df=0.9)
    assert read_corpus(tmp_path / "s", min_df=4, max_df=0.5).n_words <= open_store(tmp_path / "s").n_words


def test_vocabulary_counts_over_several_blocks_equal_the_whole_corpus_count():
    from fedtopic.corpus.vocab_counts import VocabularyCounts

    rng = np.random.default_rng(2)
    lengths = rng.integers(0, 200, 50_000)
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    words = rng.zipf(1.3, int(doc_ptr[-1])).clip(1, 3000).astype(np.uint16) - 1  # > 4M tokens: several blocks
    corpus = Corpus(words=words, doc_ptr=doc_ptr, vocab=tuple(f"w{i}" for i in range(3000)))
    doc_of = np.repeat(np.arange(corpus.n_docs), lengths)
    expected = np.bincount(np.unique(doc_of * 3000 + words) % 3000, minlength=3000)
    counts = VocabularyCounts.from_corpus(corpus)
    assert corpus.n_tokens > 1 << 22 and np.array_equal(counts.document_frequency, expected)
    assert np.array_equal(counts.term_frequency, np.bincount(words, minlength=3000))


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(0, 20), min_size=1, max_size=40), block=st.integers(1, 30))
def test_document_blocks_cover_every_document_in_order(lengths, block):
    from fedtopic.corpus.types import document_blocks

    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    blocks = list(document_blocks(ptr, block))
    assert blocks[0][0] == 0 and blocks[-1][1] == len(lengths) and all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
    assert all(b > a and (b == a + 1 or ptr[b] - ptr[a] <= block) for a, b in blocks)


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(0, 20), min_size=1, max_size=40), seed=st.integers(0, 1000),
       narrow=st.booleans())
def test_subsets_gathered_a_document_at_a_time_equal_a_concatenation(lengths, seed, narrow):
    from fedtopic.corpus.types import _gather

    rng = np.random.default_rng(seed)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    words = rng.integers(0, 100, int(ptr[-1])).astype(np.uint16 if narrow else np.int32)
    docs = rng.choice(len(lengths), int(rng.integers(0, len(lengths) + 1)), replace=bool(seed % 2)).astype(np.int64)
    out_ptr = np.concatenate([[0], np.cumsum(np.asarray(lengths)[docs])]).astype(np.int64)
    expected = [words[ptr[d]:ptr[d + 1]] for d in docs]
    got = _gather(words, ptr, docs, out_ptr)
    assert got.dtype == words.dtype
    assert np.array_equal(got, np.concatenate(expected) if expected else np.zeros(0, words.dtype))


def test_a_subset_of_a_memory_mapped_store_is_copied_out_of_the_mapping(tmp_path):
    corpus = Corpus(words=np.arange(70_000, dtype=np.int32) % 66_000, doc_ptr=np.array([0, 10, 40_000, 70_000]),
                    vocab=tuple(f"w{i}" for i in range(66_000)))
    mapped = np.memmap(tmp_path / "words.bin", dtype=np.int32, mode="w+", shape=(70_000,))
    mapped[:] = corpus.words
    mapped.flush()
    readonly = np.memmap(tmp_path / "words.bin", dtype=np.int32, mode="r", shape=(70_000,))
    sub = Corpus(words=readonly, doc_ptr=corpus.doc_ptr, vocab=corpus.vocab).subset(np.array([2, 0]))
    assert not isinstance(sub.words, np.memmap) and sub.words.flags.writeable
    assert np.array_equal(sub.words, np.concatenate([corpus.words[40_000:], corpus.words[:10]]))
    assert np.array_equal(sub.doc_ptr, [0, 30_000, 30_010])
