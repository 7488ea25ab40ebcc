"""The options of the NMF family (FedNMF+MI paper §IV-D) and the one place they become engine settings."""

from __future__ import annotations

from collections.abc import Mapping

from fedtopic.algorithms.base import Option, OptionValue
from fedtopic.algorithms.fednmf.server_rules import SERVER_RULES

SGD_OPTIONS: tuple[Option, ...] = (
    Option("lr", float, 0.1, "learning rate η of W, H and θ (paper grid 0.01-0.1; steps are capped, see docs)", minimum=0.0,
           exclusive_minimum=True),
    Option("batch", int, 32, "mini-batch size B (paper grid 16-128)", minimum=1),
    Option("mi_weight", float, 0.0, "λ of Eq. 3: weight of the SMILE mutual-information term (0 = plain NMF+SGD)",
           minimum=0.0),
    Option("tau", float, 5.0, "τ of the SMILE clip of e^T to e^−τ…e^τ (Eq. 2; the paper fixes 5)", minimum=0.0,
           exclusive_minimum=True),
    Option("precision", str, "float32", "a client's arithmetic: float32, or float64 at about twice the time "
           "(W, θ and the server rule are float64 either way)", choices=("float32", "float64")),
)

FEDERATED_OPTIONS: tuple[Option, ...] = (
    Option("local_epochs", int, 10, "E: local epochs per round (paper grid 10-40)", minimum=1),
    Option("server_rule", str, "avg", "server aggregation rule (Alg. 1 line 11; Reddi et al. 2021)",
           choices=SERVER_RULES),
    Option("server_lr", float, None, "server rate η of the rule", minimum=0.0, exclusive_minimum=True,
           default_text="the rule's default: avg 1, adagrad 0.1, yogi 0.01, adam 0.1"),
    Option("fraction", float, None, "C: fraction of clients that train each round (Alg. 1 line 4)", minimum=0.0,
           exclusive_minimum=True, maximum=1.0,
           default_text="0.2, or 2 of the P clients where 0.2 selects fewer (a masked sum hides an update only "
                        "among two)"),
)

DEFAULT_FRACTION = 0.2
"""The paper's C (FedNMF §5)."""


def client_fraction(options: Mapping[str, OptionValue], n_clients: int) -> float:
    """C as given, or by default 0.2 raised to select at least two of ``n_clients`` (all of one or two)."""
    given = options.get("fraction")
    if given is not None:
        return float(given)  # type: ignore[arg-type]
    return min(1.0, max(DEFAULT_FRACTION, 2.0 / max(n_clients, 1)))


def sgd_settings(options: Mapping[str, OptionValue]):  # -> fedtopic.neural.nmf_sgd.SGDSettings
    """The engine's settings from parsed options (imports torch: call only when training)."""
    from fedtopic.neural.nmf_sgd import SGDSettings

    return SGDSettings(lr=float(options["lr"]), batch=int(options["batch"]),  # type: ignore[arg-type]
                       mi_weight=float(options["mi_weight"]), tau=float(options["tau"]))  # type: ignore[arg-type]
