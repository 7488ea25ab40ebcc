"""NMF+SGD against scikit-learn's NMF (coordinate descent) on the same matrix, and a FedNMF(+MI) round through
the real aggregator, with and without ``mask``.

    python benchmarks/bench_nmf.py [--topics 100] [--epochs 30] [--rounds 3] [--precision-rounds 50] [--json out.json]
    python benchmarks/bench_nmf.py --softplus-only [--topics 100] [--epochs 30]

Part 1, sms-spam's training counts (D ≈ 4,200, V ≈ 6,500), k = --topics, λ = 0: our projected SGD (lr 0.05,
B = 32, one thread) epoch by epoch, and scikit-learn's ``NMF(init="random", solver="cd")`` refitted with
max_iter ∈ {1, 2, 5, 10, 20, 50, 100, 200, 400} (each from the same seed). Reported: both final losses
‖A − WH‖², and the time each needs to reach the SGD's final loss (scikit-learn: its cheapest run that does).

Part 2, ``fednmf`` on sms-spam split into 10 clients (dirichlet α = 1), C = 0.2, E = 10, k = --topics,
rule adam: seconds per round and bytes per client per round for none / mask, λ = 0 and 0.1 (--rounds rounds,
median). Part 3: the relative difference of W between mask and none after --precision-rounds rounds (λ = 0,
E = 1, k = 50: the fixed-point target is 1e-6).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedtopic.algorithms.fednmf.party import initial_global  # noqa: E402
from fedtopic.algorithms.registry import get_algorithm  # noqa: E402
from fedtopic.corpus.training_data import load_training_data  # noqa: E402
from fedtopic.models.nnls import counts_matrix  # noqa: E402
from fedtopic.neural.nmf_sgd import NMFClient, SGDSettings, reconstruction_loss  # noqa: E402
from fedtopic.simulation.sync_run import simulate_sync  # noqa: E402


def part1(k: int, epochs: int) -> dict:
    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning

    data = load_training_data(dataset="sms-spam", corpus=None, n_parties=1, scheme="a", seed=0, progress=False)
    a = counts_matrix(data.train)
    spec = get_algorithm("nmf-sgd").spec(k, epochs, seed=0)
    client = NMFClient(a, k, index=0, seed=0)
    w, _ = initial_global(a.shape[1], spec)
    sgd_curve, t0 = [], time.perf_counter()
    for e in range(epochs):
        w, _ = client.client_update(w, None, SGDSettings(0.05, 32, 0.0), 1)
        sgd_curve.append((e + 1, time.perf_counter() - t0, reconstruction_loss(a, w, client.h)))
    target = sgd_curve[-1][2]
    sk_curve = []
    for it in (1, 2, 5, 10, 20, 50, 100, 200, 400):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = NMF(k, init="random", solver="cd", max_iter=it, random_state=0, tol=1e-4)
            h = model.fit_transform(a)
        sk_curve.append((it, time.perf_counter() - t0, reconstruction_loss(a, model.components_.T, h), model.n_iter_))
    reach = next((c for c in sk_curve if c[2] <= target), None)
    return {"documents": a.shape[0], "vocabulary": a.shape[1], "topics": k, "norm_A2": float(a.multiply(a).sum()),
            "sgd_curve": sgd_curve, "sklearn_curve": sk_curve, "sgd_final_loss": target,
            "sgd_seconds": sgd_curve[-1][1], "sklearn_best_loss": min(c[2] for c in sk_curve),
            "sklearn_seconds_to_sgd_loss": None if reach is None else reach[1],
            "sklearn_iterations_to_sgd_loss": None if reach is None else reach[3]}


def softplus_variant(k: int, epochs: int) -> dict:
    """The alternative to projection: W = softplus(U), H = softplus(G), the same mini-batches and rates (η on U
    and G; G's step on each document's own term, as ours), from the same W⁽⁰⁾, H⁽⁰⁾ mapped through softplus⁻¹."""
    import torch

    from fedtopic.neural.nmf_sgd import init_h

    data = load_training_data(dataset="sms-spam", corpus=None, n_parties=1, scheme="a", seed=0, progress=False)
    a = counts_matrix(data.train)
    spec = get_algorithm("nmf-sgd").spec(k, epochs, seed=0)
    w0, _ = initial_global(a.shape[1], spec)
    h0 = init_h(a, k, np.random.default_rng([0, 0, 0x48]))
    inv = lambda x: np.log(np.expm1(np.maximum(x, 1e-12)))  # noqa: E731  softplus⁻¹
    u, g = torch.tensor(inv(w0)), torch.tensor(inv(h0))
    lr, b, curve, t0 = 0.1, 32, [], time.perf_counter()
    for e in range(epochs):
        order = np.random.default_rng([0, 0, e]).permutation(a.shape[0])
        for start in range(0, a.shape[0], b):
            idx = order[start:start + b]
            x = torch.from_numpy(a[idx].toarray())
            uu = u.clone().requires_grad_(True)
            gg = g[torch.from_numpy(idx)].clone().requires_grad_(True)
            loss = ((x - torch.nn.functional.softplus(gg) @ torch.nn.functional.softplus(uu).T) ** 2).sum() / len(idx)
            gu, gh = torch.autograd.grad(loss, [uu, gg])
            with torch.no_grad():
                u -= lr * gu
                g[torch.from_numpy(idx)] = gg.detach() - lr * len(idx) * gh
        with torch.no_grad():
            w, h = torch.nn.functional.softplus(u).numpy(), torch.nn.functional.softplus(g).numpy()
        curve.append((e + 1, time.perf_counter() - t0, reconstruction_loss(a, w, h)))
    return {"softplus_curve": curve, "softplus_final_loss": curve[-1][2]}


def fed_run(k: int, rounds: int, protection: str, mi: float, epochs: int) -> tuple[dict, np.ndarray]:
    data = load_training_data(dataset="sms-spam", corpus=None, n_parties=10, scheme="dirichlet", seed=0,
                              progress=False, dirichlet_alpha=1.0)
    spec = get_algorithm("fednmf").spec(k, rounds, seed=0, options={
        "server_rule": "adam", "mi_weight": str(mi), "local_epochs": str(epochs), "fraction": "0.2"})
    with tempfile.TemporaryDirectory() as tmp:
        per_round: list[float] = []
        last = [time.perf_counter()]

        def on_round(i: int, rec) -> None:
            if i == 0:
                now = time.perf_counter()
                per_round.append(now - last[0])
                last[0] = now

        s = simulate_sync(data, "fednmf", spec, Path(tmp), protection=protection, say=lambda _: None,
                          on_round=on_round)
        with np.load(Path(tmp) / "model.npz") as npz:
            w = npz["factors"]
    return {"protection": protection, "mi_weight": mi, "rounds": rounds,
            "seconds_per_round": statistics.median(per_round[1:] or per_round),
            "bytes_per_client_round": s["bytes_per_client_round"], "f1": s.get("macro_f1"),
            "accuracy": s.get("accuracy"), "we_coherence": s["we_coherence"]}, w


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--precision-rounds", type=int, default=50)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--softplus-only", action="store_true", help="only the parameterised alternative of part 1")
    ap.add_argument("--skip-part1", action="store_true", help="only the federated parts")
    args = ap.parse_args()
    if args.softplus_only:
        sp_out = softplus_variant(args.topics, args.epochs)
        print(f"softplus parameterisation k={args.topics}: loss after {args.epochs} epochs "
              f"{sp_out['softplus_final_loss']:.0f}", flush=True)
        if args.json:
            args.json.write_text(json.dumps(sp_out, indent=2))
        return
    out: dict = {}
    if not args.skip_part1:
        out["part1"] = p = part1(args.topics, args.epochs)
        print(f"NMF k={p['topics']} on sms-spam ({p['documents']} x {p['vocabulary']}, |A|² = {p['norm_A2']:.0f}): "
              f"SGD {args.epochs} epochs {p['sgd_seconds']:.1f} s → loss {p['sgd_final_loss']:.0f}; scikit-learn "
              f"best {p['sklearn_best_loss']:.0f}, reaches the SGD loss in {p['sklearn_seconds_to_sgd_loss']} s "
              f"({p['sklearn_iterations_to_sgd_loss']} iterations)", flush=True)
    out["part2"] = []
    for mi in (0.0, 0.1):
        for protection in ("none", "mask"):
            row, _ = fed_run(args.topics, args.rounds, protection, mi, 10)
            out["part2"].append(row)
            print(f"fednmf k={args.topics} λ={mi} {protection}: {row['seconds_per_round']:.2f} s/round, "
                  f"{row['bytes_per_client_round']:,} bytes/client/round", flush=True)
    if args.precision_rounds:
        _, w_none = fed_run(50, args.precision_rounds, "none", 0.0, 1)
        _, w_mask = fed_run(50, args.precision_rounds, "mask", 0.0, 1)
        rel = float(np.abs(w_mask - w_none).max() / np.abs(w_none).max())
        out["part3"] = {"rounds": args.precision_rounds, "max_relative_difference": rel}
        print(f"mask vs none after {args.precision_rounds} rounds: max |ΔW| / max |W| = {rel:.2e}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
