"""`fedtopic vocab build | merge | align | show`: the shared vocabulary a consortium needs for its own documents."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from fedtopic.cli.output import FormatOption, OutputFormat, count_parties, emit


class AlignMethod(str, Enum):
    """How ``vocab align`` aligns (``auto``: private unless the consortium's protection is none)."""

    auto = "auto"
    private = "private"
    plain = "plain"


def _write_private(out: Path, result: Any) -> None:
    """The vocabulary file of a private alignment (with its pooled counts if any), its release recorded under
    "release" (``Vocabulary.from_json`` ignores it; ``node run`` reads it)."""
    import json

    from fedtopic.corpus.vocabulary import Vocabulary

    text = result.counts.to_json() if result.counts is not None else Vocabulary(result.words).to_json()
    _write_owner_only(out, json.dumps(json.loads(text) | {"release": result.release}, ensure_ascii=False) + "\n")


app = typer.Typer(help="Vocabularies for your own documents: one party's with counts, a consortium's merged one.",
                  no_args_is_help=True)


def _write_owner_only(out: Path, text: str) -> None:
    """``text`` into ``out``, created 0600 (an existing file made so before it is written): an aligned file holds
    the consortium's vocabulary, with --with-counts also the pooled counts."""
    import os

    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


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
    with_counts: Annotated[bool, typer.Option(help="gFedNTM's consensus: offer all words with their frequencies; --min-df/--max-df/--max-size then cut the pooled counts (plain: the aggregator learns the frequencies; private: only their masked sums)")] = False,
    max_size: Annotated[Optional[int], typer.Option(min=1, help="--with-counts: keep the most frequent words only")] = None,
    method: Annotated[AlignMethod, typer.Option(help="private: the aggregator learns no word and nobody learns a word fewer than --min-parties parties hold (DP-accounted); plain: every party's word list goes to the aggregator; auto: private unless the consortium's protection is none")] = AlignMethod.auto,
    min_parties: Annotated[int, typer.Option(min=1, help="private: admit a word only if at least this many parties hold it (1 shows every party's candidate words to all parties)")] = 2,
    noise_multiplier: Annotated[float, typer.Option(min=0.0, help="private: the noise on the documents' word weights, in units of one document's (larger: smaller ε, fewer rare words)")] = 1.0,
    threshold: Annotated[float, typer.Option(min=0.0, help="private: the noisy weight a word needs to be a candidate (one document giving a word its whole weight is 1)")] = 0.5,
    max_words: Annotated[int, typer.Option(min=1, help="private: the most distinct words one document gives weight to (a uniform draw beyond)")] = 256,
    delta: Annotated[float, typer.Option(min=0.0, max=1.0, help="private: the δ of the vocabulary's (ε, δ)")] = 1e-6,
    insecure: Annotated[bool, typer.Option("--insecure", help="allow plain HTTP to an aggregator that is not on loopback, or HTTPS without checking its certificate")] = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Align the consortium's vocabulary through the aggregator; every party runs this and all get the same file.

    private (the default under every protection but none): keyed-hash weights of this party's documents go under
    the masks with distributed DP noise, then candidate words held by at least --min-parties parties are revealed
    to the parties only; the file records the release's (ε, δ), which `node run` adds to the party's total.
    plain: post this party's words (never counts or documents, unless --with-counts) to the aggregator."""
    from fedtopic.cli.output import stderr_console
    from fedtopic.consortium.config import load_consortium
    from fedtopic.network.tls import configure_trust
    from fedtopic.node.vocab_align import align_vocabulary

    _refuse_existing(out, overwrite)
    cfg = load_consortium(config)
    configure_trust(cfg.aggregator.tls_cert_file(config.parent), insecure)
    say = lambda msg: stderr_console.print(msg, highlight=False)  # noqa: E731
    private = method == AlignMethod.private or (method == AlignMethod.auto and cfg.aggregator.protection != "none")
    if private:
        from fedtopic.node.private_vocab import align_privately
        from fedtopic.privacy.vocab_release import ReleaseSettings

        settings = ReleaseSettings(noise_multiplier=noise_multiplier, threshold=threshold, max_words=max_words,
                                   min_parties=min_parties, delta=delta)
        result = align_privately(cfg, config, party, corpus, settings=settings, with_counts=with_counts,
                                 min_df=min_df, max_df=max_df, max_size=max_size, key_file=key, url=url,
                                 session=session, timeout=timeout, say=say)
        _write_private(out, result)
        release = result.release
        emit({"out": str(out), "words": len(result.words), "parties": len(cfg.parties), "method": "private",
              "epsilon": release["epsilon"], "delta": release["delta"], "admitted": release["admitted"],
              "offered": release["offered"], "too_long": release["too_long"]}, fmt,
             [f"{out}: {len(result.words):,} words aligned privately over {count_parties(len(cfg.parties))} "
              f"(ε = {release['epsilon']:.2f}, δ = {release['delta']:g} per document; {release['offered']:,} of "
              f"this party's words were candidates, {release['admitted']:,} held by ≥ {min_parties} parties); "
              "run `fedtopic node run ... --corpus THEIR_DOCS --vocab` with this file"])
        return
    if with_counts:
        from fedtopic.node.vocab_align import align_vocabulary_counts

        counts = align_vocabulary_counts(cfg, config, party, corpus, key_file=key, url=url, session=session,
                                         min_df=min_df, max_df=max_df, max_size=max_size, timeout=timeout, say=say)
        _write_owner_only(out, counts.to_json())
        vocab = counts.vocabulary()
    else:
        vocab = align_vocabulary(cfg, config, party, corpus, key_file=key, url=url, session=session, min_df=min_df,
                                 max_df=max_df, timeout=timeout, say=say)
        _write_owner_only(out, vocab.to_json())
    emit({"out": str(out), "words": len(vocab), "parties": len(cfg.parties), "method": "plain"}, fmt,
         [f"{out}: {len(vocab):,} words aligned in the clear over {count_parties(len(cfg.parties))}; "
          "run `fedtopic node run ... --corpus THEIR_DOCS --vocab` with this file"])
