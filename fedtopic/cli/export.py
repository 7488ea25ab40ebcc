"""`fedtopic export tensorboard|pyldavis|gensim RUN --out …`: a run's history for TensorBoard, its model for
pyLDAvis and gensim."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from fedtopic.cli.output import FormatOption, OutputFormat, emit

app = typer.Typer(help="A run in other tools' formats: its history for TensorBoard, its model for pyLDAvis and "
                       "gensim.", no_args_is_help=True)


@app.command("tensorboard")
def tensorboard(
    run: Annotated[Path, typer.Argument(help="a run folder (simulate, train, demo), a consortium's folder or state folder (node run), or one history .jsonl")],
    out: Annotated[Path, typer.Option(help="the TensorBoard log folder: one run per party under it (its earlier event files replaced)")],
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """The per-round history as TensorBoard event files: one run per party, tags <party>/<metric> at step = round
    (then: tensorboard --logdir OUT); a train run's per-iteration perplexity curve. Works on a live run too: export
    again to catch up."""
    from fedtopic.runs.tensorboard import export_history

    if not run.exists():
        from fedtopic.errors import ConfigError

        raise ConfigError(f"{run} does not exist")
    written = export_history(run, out)
    emit({"out": str(out), "scalars": written}, fmt,
         [f"{out}: {sum(written.values()):,} scalars of {len(written)} "
          f"{'party' if len(written) == 1 else 'parties'}; view with tensorboard --logdir {out}"])


@app.command("pyldavis")
def pyldavis(
    run: Annotated[Path, typer.Argument(help="a train or simulate run folder that keeps θ (theta.npy)")],
    out: Annotated[Path, typer.Option(help="the JSON file of pyLDAvis.prepare's arguments")],
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """pyLDAvis's inputs for the run's model: pyLDAvis.prepare(**json.load(open(OUT))) shows it."""
    import json

    from fedtopic.node.state_file import write_text_atomic
    from fedtopic.runs.interop import pyldavis_data

    data = pyldavis_data(run)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out, json.dumps(data))
    emit({"out": str(out), "topics": len(data["topic_term_dists"]), "documents": len(data["doc_lengths"])}, fmt,
         [f"{out}: {len(data['topic_term_dists'])} topics, {len(data['doc_lengths']):,} documents; "
          "in Python: pyLDAvis.prepare(**json.load(open(OUT)))"])


@app.command("gensim")
def gensim(
    run: Annotated[Path, typer.Argument(help="a run folder")],
    out: Annotated[Path, typer.Option(help="the gensim model file (its Dictionary beside it, OUT.dictionary)")],
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """The run's model as a gensim LdaModel: LdaModel.load(OUT) has its topics and infers θ of new documents."""
    from fedtopic.runs.interop import gensim_lda

    out.parent.mkdir(parents=True, exist_ok=True)
    gensim_lda(run, out)
    emit({"out": str(out), "dictionary": str(out) + ".dictionary"}, fmt,
         [f"{out} (and {out}.dictionary): gensim.models.LdaModel.load('{out}')"])
