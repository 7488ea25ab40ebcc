"""`fedtopic privacy rdp`: the accountant on its own (SUB-LDA Eq. 3, composition, conversion to (ε, δ))."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from fedtopic.cli.output import FormatOption, OutputFormat, emit

app = typer.Typer(help="The Rényi-DP accountant, its empirical audit, and a membership-inference attack on released models.", no_args_is_help=True)

SHOWN_ORDERS = (2, 4, 8, 14, 16, 32, 64, 128, 256)


def parse_orders(text: str) -> list[int]:
    """"2,4,8" or "2-64" or a mix ("2-32,64,128") as a list of integer orders."""
    from fedtopic.errors import PrivacyError

    orders: list[int] = []
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        try:
            orders += list(range(int(lo), int(hi) + 1)) if sep else [int(lo)]
        except ValueError:
            raise PrivacyError(f"--orders takes integers and ranges like 2-64,128, got {text!r}") from None
    return orders


@app.command("rdp")
def rdp(
    sampling_rate: Annotated[float, typer.Option(help="Poisson subsampling rate γ in (0, 1]")],
    steps: Annotated[int, typer.Option(help="number of steps (iterations) composed")],
    delta: Annotated[float, typer.Option(help="δ of the (ε, δ) reported, in (0, 1)")] = 1e-5,
    noise_multiplier: Annotated[Optional[float], typer.Option(help="σ of the Gaussian noise (sensitivity 1)")] = None,
    rdp_budget: Annotated[Optional[float], typer.Option(help="or: per-step RDP ε(α) of the unsampled mechanism, σ² = α/(2ε(α))")] = None,
    order: Annotated[Optional[int], typer.Option(help="the order α of --rdp-budget (also shown in the output)")] = None,
    orders: Annotated[str, typer.Option(help="orders to optimise over, e.g. 2-64,72,128,256")] = "2-64,72,80,96,128,160,192,224,256",
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """RDP per order of ``steps`` Poisson-subsampled Gaussian steps, and the best (ε, δ) two ways."""
    from fedtopic.errors import PrivacyError
    from fedtopic.privacy.rdp import privacy_report, sigma_for_budget

    if (noise_multiplier is None) == (rdp_budget is None):
        raise PrivacyError("give exactly one of --noise-multiplier or --rdp-budget (with --order)")
    if rdp_budget is not None:
        if order is None:
            raise PrivacyError("--rdp-budget needs --order α (the order the budget is stated at)")
        noise_multiplier = sigma_for_budget(rdp_budget, order)
    if steps < 0:
        raise PrivacyError(f"--steps must be ≥ 0, got {steps}")
    grid = sorted(set(parse_orders(orders)) | ({order} if order is not None else set()))
    rep = privacy_report(sampling_rate, noise_multiplier, steps, delta, grid)  # type: ignore[arg-type]
    data = rep.as_dict() | ({"order": order, "rdp_at_order": rep.rdp_at(order)} if order is not None else {})
    shown = [a for a in grid if a in SHOWN_ORDERS or a == order]
    lines = [f"{steps} steps, γ = {sampling_rate:g}, σ = {rep.noise_multiplier:.6g}:",
             "  order  RDP ε(α)",
             *(f"  {a:>5}  {rep.rdp_at(a):.6g}" for a in shown),
             f"({rep.epsilon:.6g}, {delta:g})-DP at order {rep.best_order} (Balle et al. 2020); "
             f"classic conversion: {rep.epsilon_classic:.6g} at order {rep.best_order_classic}"]
    emit(data, fmt, lines)


@app.command("audit")
def audit(
    sampling_rate: Annotated[float, typer.Option(help="γ of the releases audited, in (0, 1]")] = 0.5,
    noise_multiplier: Annotated[float, typer.Option(help="σ of the releases audited; 0 audits a broken (noiseless) mechanism")] = 2.0,
    releases: Annotated[int, typer.Option(min=1, help="releases per run (genesis + rounds)")] = 3,
    runs: Annotated[int, typer.Option(min=40, help="runs on each of the two neighbouring corpora")] = 1000,
    delta: Annotated[float, typer.Option(help="δ of the bound and of the accountant's ε")] = 1e-5,
    confidence: Annotated[float, typer.Option(min=0.5, max=0.9999, help="the bound holds with this probability")] = 0.95,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    distributed: Annotated[int, typer.Option(min=0, help="audit distributed DP instead: the released sum of this many parties' releases, each with its Skellam share (csfed-lda's dp.distributed)")] = 0,
    mechanism: Annotated[str, typer.Option(help="lda: csfed/dafed's count releases; dp-sgd: the DP-SGD release of fednmf's and gfedntm's dp.distributed (needs --distributed N)")] = "lda",
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Empirical lower bound on the ε of a DP party's releases (canary token, threshold test, Clopper–Pearson),
    next to the accountant's ε for the same mechanism; exit 1 if the bound exceeds it."""
    from fedtopic.cli.output import stderr_console
    from fedtopic.errors import PrivacyError
    from fedtopic.experiments.dp_audit import AuditSettings, audit_releases
    from fedtopic.privacy.rdp import check_delta, check_rate

    check_rate(sampling_rate)
    check_delta(delta)
    if not 0.0 <= noise_multiplier < float("inf"):
        raise PrivacyError(f"--noise-multiplier must be ≥ 0, got {noise_multiplier}")
    if distributed == 1:
        raise PrivacyError("--distributed takes the parties of the sum, at least 2 (0: audit one party's releases)")
    if mechanism not in ("lda", "dp-sgd"):
        raise PrivacyError(f"--mechanism must be lda or dp-sgd, got {mechanism!r}")
    if mechanism == "dp-sgd" and distributed < 2:
        raise PrivacyError("--mechanism dp-sgd audits a distributed release: give --distributed N (N ≥ 2)")
    stderr_console.print(f"auditing {runs} runs with and {runs} without the canary …", highlight=False)
    out = audit_releases(AuditSettings(sampling_rate=sampling_rate, noise_multiplier=noise_multiplier,
                                       releases=releases, runs=runs, delta=delta, confidence=confidence, seed=seed,
                                       distributed=distributed, mechanism=mechanism))
    verdict = "holds" if out["holds"] else "VIOLATED"
    emit(out, fmt, [f"empirical ε ≥ {out['epsilon_lower_bound']:.3f} (confidence {confidence:g}; test FPR "
                    f"{out['false_positive_rate']:.3f}, FNR {out['false_negative_rate']:.3f}); accountant ε = "
                    f"{out['accountant_epsilon']:.3f} at δ = {delta:g}: {verdict}"])
    if not out["holds"]:
        raise typer.Exit(1)


@app.command("attack")
def attack(
    noise_multiplier: Annotated[float, typer.Option(min=0.0, help="σ of the DP runs (local and distributed alike)")] = 8.0,
    models: Annotated[int, typer.Option(min=8, help="training runs (each is once the target, the others its shadows)")] = 32,
    canaries: Annotated[int, typer.Option(min=2, help="canary documents, each in a run with probability 1/2")] = 20,
    parties: Annotated[int, typer.Option(min=2, help="parties of the csfed-lda consortium")] = 3,
    rounds: Annotated[int, typer.Option(min=1, help="aggregator rounds of every run")] = 8,
    delta: Annotated[float, typer.Option(help="δ of the DP runs")] = 1e-5,
    seed: Annotated[int, typer.Option(help="random seed")] = 0,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """A LiRA membership-inference attack (Carlini et al. 2022) on released csfed-lda models: without DP, with local
    DP and with distributed DP (document-level, the same ε), reporting TPR at 0.1 % and 1 % FPR and AUC, and
    whether each attack stayed within what (ε, δ)-DP allows (exit 1 if a DP run did not)."""
    from fedtopic.cli.output import stderr_console
    from fedtopic.errors import PrivacyError
    from fedtopic.experiments.membership import AttackSettings, attack_table
    from fedtopic.privacy.rdp import check_delta

    check_delta(delta)
    if noise_multiplier <= 0:
        raise PrivacyError("--noise-multiplier must be > 0: the DP runs need noise (the attack runs one without DP)")
    stderr_console.print(f"training {3 * models} models ({models} per mode) …", highlight=False)
    rows = attack_table(AttackSettings(noise_multiplier=noise_multiplier, models=models, canaries=canaries,
                                       parties=parties, rounds=rounds, delta=delta, seed=seed))
    lines = [f"{'run':<12} {'ε':>7} {'TPR@0.1%':>9} {'TPR@1%':>8} {'AUC':>6}  within e^ε·FPR + δ"]
    for r in rows:
        eps = "-" if r["epsilon"] is None else f"{r['epsilon']:.2f}"
        within = r["within_dp_bound"] or {}
        lines.append(f"{r['mode']:<12} {eps:>7} {r['tpr_at_fpr_0.001']:>9.3f} {r['tpr_at_fpr_0.01']:>8.3f} "
                     f"{r['auc']:>6.3f}  {', '.join(f'{k}: {v}' for k, v in within.items())} "
                     f"(ε = {r['bound_epsilon']:.2f})")
    emit(rows, fmt, lines)
    if any(r["epsilon"] is not None and not all((r["within_dp_bound"] or {}).values()) for r in rows):
        raise typer.Exit(1)
