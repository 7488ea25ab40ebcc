"""iFTM's refusal of privatised input that is mostly noise (issue 46, item 7), and the τ it names.

At the paper's τ = 0.2 and ε = 11 a token of bbc-news (V = 10,720) keeps ~590 noise words beside its own: every
topic came out as noise, with top-word weights of 1e-4. The closed form of what survives is checked against the
real privatisation kernel; the suggested τ against a direct search of its objective; the CLI refuses in one line
and the τ it names is accepted and trains topics whose top words carry weight.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from fedtopic.algorithms.iftm.options import (
    NOISE_SHARE_LIMIT,
    noise_share,
    suggested_tau,
)
from fedtopic.cli.main import main
from fedtopic.models.laplace_kept import kept_per_token
from fedtopic.models.privatize import buffer_size, privatized_vector


@pytest.mark.parametrize(("epsilon", "tau", "n_words"), [(11.0, 0.2, 600), (8.0, 0.9, 3000), (11.0, 1.2, 800)])
def test_the_closed_form_is_what_the_privatisation_keeps(epsilon, tau, n_words):
    tokens, word = 20_000, 7
    out_w = np.empty(buffer_size(n_words, epsilon, tau), dtype=np.int64)
    out_v = np.empty(out_w.shape[0], dtype=np.float64)
    true_kept = noise_kept = 0
    for t in range(tokens):
        m = privatized_vector(np.uint64(12345), t, word, n_words, epsilon, tau, out_w, out_v)
        true_kept += int(word in out_w[:m])
        noise_kept += m - int(word in out_w[:m])
    p_true, noise = kept_per_token(epsilon, tau, n_words)
    assert abs(true_kept / tokens - p_true) < 4 * math.sqrt(p_true * (1 - p_true) / tokens) + 1e-3
    assert abs(noise_kept / tokens - noise) < 4 * math.sqrt(noise / tokens) + 1e-3


@pytest.mark.parametrize("epsilon", [6.0, 8.0, 11.0, 15.0])
@pytest.mark.parametrize("n_words", [2_000, 10_720, 50_000])
def test_the_suggested_tau_maximises_its_objective(epsilon, n_words):
    def minus(t: float) -> float:
        true, noise = kept_per_token(epsilon, t, n_words)
        return -true * (true / (true + noise)) ** 2

    best = minimize_scalar(minus, bounds=(0.0, 1.0), method="bounded", options={"xatol": 1e-6})
    assert abs(suggested_tau(epsilon, n_words) - best.x) < 2e-4
    assert suggested_tau(math.inf, n_words) == 0.0


def test_no_tau_is_named_where_none_helps():
    from fedtopic.algorithms.iftm.options import check_noise
    from fedtopic.errors import ConfigError

    with pytest.raises(ConfigError, match=r"No τ helps at this ε and vocabulary .*raise ε, or cut the vocabulary"):
        check_noise({"epsilon": 5.0, "tau": 0.2}, 50_000)
    with pytest.raises(ConfigError, match=r"--opt tau=0\.93 keeps"):
        check_noise({"epsilon": 11.0, "tau": 0.2}, 10_720)
    check_noise({"epsilon": 11.0, "tau": 0.93}, 10_720)
    check_noise({"epsilon": float("inf"), "tau": 0.2}, 10_720)


def test_the_share_of_noise_falls_with_tau_and_rises_with_the_vocabulary():
    assert noise_share(11.0, 0.2, 10_720) > 0.99 > NOISE_SHARE_LIMIT  # the paper's default on bbc-news
    assert noise_share(11.0, suggested_tau(11.0, 10_720), 10_720) < 0.25
    taus = np.linspace(0.0, 1.0, 11)
    assert all(np.diff([noise_share(11.0, t, 10_720) for t in taus]) < 0)
    assert all(np.diff([noise_share(11.0, 0.2, v) for v in (100, 1_000, 10_000)]) > 0)
    assert noise_share(math.inf, 0.2, 10_720) == 0.0


def test_a_noise_run_is_refused_in_one_line_naming_the_tau_that_works(tmp_path, capsys):
    common = ["train", "--algorithm", "iftm-lda", "--dataset", "synthetic", "-k", "5", "--iterations", "8",
              "--seed", "1", "--format", "json"]
    assert main([*common, "--opt", "tau=0.2", "--out", str(tmp_path / "refused")]) == 2  # the paper's τ
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "noise" in err and "costs no privacy" in err, err
    assert not (tmp_path / "refused" / "model.npz").exists()
    tau = re.search(r"--opt tau=([0-9.]+)", err).group(1)
    assert main([*common, "--opt", f"tau={tau}", "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    topics = json.loads((tmp_path / "run" / "topics.json").read_text())
    topics = topics["topics"] if isinstance(topics, dict) else topics
    vocabulary = len(json.loads((tmp_path / "run" / "vocab.json").read_text())["words"])
    # the top word of every topic carries real weight, not the 1/V-like weights of noise topics
    assert min(t["weights"][0] for t in topics) > 20 / vocabulary
    # the default τ is the one the refusal names (issue 66: the defaults always refused)
    assert main([*common, "--out", str(tmp_path / "default")]) == 0
    assert json.loads(capsys.readouterr().out)["tau"] == float(tau)
    with np.load(tmp_path / "run" / "model.npz") as a, np.load(tmp_path / "default" / "model.npz") as b:
        assert np.array_equal(a["phi"], b["phi"])
