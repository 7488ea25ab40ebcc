"""`fedtopic vocab build | merge | align | show`: the shared vocabulary a consortium needs for its own documents."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from fedtopic.cli.output import FormatOption, OutputFormat, count_parties, emit

app = typer.Typer(help="Vocabularies for your own documents: one party's with counts, a consortium's merged one.",
                  no_args_is_help=True)


def _refuse_existing(out: Path, overwrite: bool) -> None:
    from fedtopic.errors import ConfigError

    if out.exists() and not overwrite:
        raise ConfigError(f"{out} exists; pick another --out or pass --overwrite")


@app.command("build")
def build(
    corpus: Annotated[Path, typer.Argument(help="this party's documents: a folder of .txt, a .jsonl, or a UCI docword file")],
    out: Annotated[Path, typer.Option(help="the counts file to write (JSON)")] = Path("party-vocab.json"),
    overwrite: Annotated[bool, typer.Option(help="replace --out if it exists")] = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Count every word of one party's documents (document and term frequency; nothing is cut yet)."""
    from fedtopic.corpus.readers import read_corpus
    from fedtopic.corpus.vocab_counts import VocabularyCounts

    _refuse_existing(out, overwrite)
    counts = VocabularyCounts.from_corpus(read_corpus(corpus, min_df=1, max_df=1.0))
    counts.save(out)
    emit({"out": str(out), "words": len(counts.words), "documents": counts.documents,
          "tokens": int(counts.term_frequency.sum())}, fmt,
         [f"{out}: {len(counts.words):,} words over {counts.documents:,} documents "
          f"({int(counts.term_frequency.sum()):,} tokens); send it to whoever merges the consortium's vocabulary"])


@app.command("merge")
def merge(
    files: Annotated[list[Path], typer.Argument(help="every party's counts file (from `fedtopic vocab build`)")],
    out: Annotated[Path, typer.Option(help="the consortium's vocabulary to write (JSON; give it to `node run --vocab`)")] = Path("vocab.json"),
    min_df: Annotated[int, typer.Option(min=1, help="keep words in at least this many documents, pooled")] = 2,
    max_df: Annotated[float, typer.Option(min=0.0, max=1.0, help="drop words in more than this fraction of documents, pooled")] = 0.5,
    max_size: Annotated[Optional[int], typer.Option(min=1, help="then keep at most this many words")] = None,
    overwrite: Annotated[bool, typer.Option(help="replace --out if it exists")] = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Merge the parties' counts into the consortium's vocabulary (the same files give the same ids everywhere)."""
    from fedtopic.corpus.vocab_counts import VocabularyCounts, merge_counts

    _refuse_existing(out, overwrite)
    merged = merge_counts([VocabularyCounts.load(f) for f in files], min_df=min_df, max_df=max_df, max_size=max_size)
    merged.save(out)
    emit({"out": str(out), "words": len(merged.words), "documents": merged.documents, "parties": len(files)}, fmt,
         [f"{out}: {len(merged.words):,} words from {count_parties(len(files))} ({merged.documents:,} documents); "
          "every party runs `fedtopic node run ... --corpus THEIR_DOCS --vocab` with this file"])


@app.command("show")
def show(
    file: Annotated[Path, typer.Argument(help="a vocabulary or counts file, or a run folder's vocab.json")],
    top: Annotated[int, typer.Option(min=1, help="words to show")] = 20,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Size and first words of a vocabulary file."""
    from fedtopic.corpus.vocabulary import Vocabulary
    from fedtopic.errors import CorpusError

    try:
        vocab = Vocabulary.from_json(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{file}: cannot be read ({exc})") from None
    words = list(vocab.words[:top])
    emit({"file": str(file), "words": len(vocab), "first": words}, fmt,
         [f"{file}: {len(vocab):,} words", " ".join(words)])


@app.command("align")
def align(
    corpus: Annotated[Path, typer.Argument(help="this party's documents: a folder of .txt, a .jsonl, or a UCI docword file")],
    config: Annotated[Path, typer.Option(help="the consortium's consortium.toml")],
    party: Annotated[str, typer.Option(help="this party's id")],
    key: Annotated[Optional[Path], typer.Option(help="this party's private key file (default: keys/<party>.key.json beside the config)")] = None,
    out: Annotated[Path, typer.Option(help="the consortium's vocabulary to write (JSON; give it to `node run --vocab`)")] = Path("vocab.json"),
    min_df: Annotated[int, typer.Option(min=1, help="post only words in at least this many of this party's documents")] = 2,
    max_df: Annotated[float, typer.Option(min=0.0, max=1.0, help="post only words in at most this fraction of this party's documents")] = 0.5,
    url: Annotated[Optional[str], typer.Option(help="aggregator URL (default: aggregator.url of the config)")] = None,
    session: Annotated[Optional[str], typer.Option(help="alignment session id (default: derived from the config)")] = None,
    timeout: Annotated[float, typer.Option(min=0.0, help="seconds to wait for the other parties' words")] = 3600.0,
    overwrite: Annotated[bool, typer.Option(help="replace --out if it exists")] = False,
    with_counts: Annotated[bool, typer.Option(help="gFedNTM's consensus: post all words with their frequencies; --min-df/--max-df/--max-size then cut the pooled counts (the aggregator learns the frequencies)")] = False,
    max_size: Annotated[Optional[int], typer.Option(min=1, help="--with-counts: keep the most frequent words only")] = None,
    insecure: Annotated[bool, typer.Option("--insecure", help="allow plain HTTP to an aggregator that is not on loopback, or HTTPS without checking its certificate")] = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Align the consortium's vocabulary through the aggregator: post this party's words (never counts or
    documents, unless --with-counts), receive what every party receives. Every party runs this; all get the same
    file."""
    from fedtopic.cli.output import stderr_console
    from fedtopic.consortium.config import load_consortium
    from fedtopic.network.tls import configure_trust
    from fedtopic.node.vocab_align import align_vocabulary

    _refuse_existing(out, overwrite)
    cfg = load_consortium(config)
    configure_trust(cfg.aggregator.tls_cert_file(config.parent), insecure)
    say = lambda msg: stderr_console.print(msg, highlight=False)  # noqa: E731
    if with_counts:
        from fedtopic.node.vocab_align import align_vocabulary_counts

        counts = align_vocabulary_counts(cfg, config, party, corpus, key_file=key, url=url, session=session,
                                         min_df=min_df, max_df=max_df, max_size=max_size, timeout=timeout, say=say)
        counts.save(out)
        vocab = counts.vocabulary()
    else:
        vocab = align_vocabulary(cfg, config, party, corpus, key_file=key, url=url, session=session, min_df=min_df,
                                 max_df=max_df, timeout=timeout, say=say)
        out.write_text(vocab.to_json(), encoding="utf-8")
    emit({"out": str(out), "words": len(vocab), "parties": len(cfg.parties)}, fmt,
         [f"{out}: {len(vocab):,} words aligned over {count_parties(len(cfg.parties))}; "
          "run `fedtopic node run ... --corpus THEIR_DOCS --vocab` with this file"])
