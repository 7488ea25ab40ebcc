"""Options of the neural topic models (ProdLDA / gFedNTM), with contextualized-topic-models' defaults."""

from __future__ import annotations

from collections.abc import Mapping

from fedtopic.algorithms.base import Option, OptionValue

NTM_OPTIONS: tuple[Option, ...] = (
    Option("lr", float, 2e-3, "Adam's learning rate (betas 0.99/0.99)", minimum=0.0, exclusive_minimum=True),
    Option("batch", int, 64, "mini-batch size (in gfedntm of the union batch, each node giving its share of it)", minimum=2),
)
PATIENCE = Option("patience", int, 5, "early stopping: epochs without a better validation loss (25 % of every "
                  "party's documents held out)", minimum=1)
CENTRAL_OPTIONS: tuple[Option, ...] = NTM_OPTIONS + (PATIENCE,)
FEDERATED_OPTIONS: tuple[Option, ...] = NTM_OPTIONS + (
    PATIENCE,
    Option("tolerance", float, 0.0, "also stop when an epoch changes the weights by less than this, relatively "
           "(paper §3.2; 0: never)", minimum=0.0),
    Option("wire", str, "float32", "the gradient messages' precision under protection none: float32 (half the "
           "bytes, torch's precision in the authors' code; every node and the in-process run still apply the same "
           "sum) or float64 (the centralised model's bits); mask carries fixed point either way",
           choices=("float32", "float64")),
)


def ntm_settings(options: Mapping[str, OptionValue], epochs: int):  # -> fedtopic.neural.ntm_train.NTMSettings
    """The training settings from parsed options (imports torch: call only when training)."""
    from fedtopic.neural.ntm_train import NTMSettings

    return NTMSettings(lr=float(options["lr"]), batch=int(options["batch"]), epochs=epochs,  # type: ignore[arg-type]
                       patience=int(options.get("patience") or 5),  # type: ignore[arg-type]
                       tolerance=float(options.get("tolerance") or 0.0),  # type: ignore[arg-type]
                       wire=str(options.get("wire") or "float32"))
