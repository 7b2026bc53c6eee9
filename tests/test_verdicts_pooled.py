"""The building blocks of the claims table's verdict rules (smartvector_bench/core/evaluation/verdicts.py): Verdict, the
Holm adjustment, sweep completeness, and the paired cluster permutation test and bootstrap pooled over seeds, on small
synthetic per-query outcomes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from smartvector_bench.core.evaluation import verdicts as V
from smartvector_bench.core.evaluation.metrics.clustered import paired_cluster_permutation_test

from .verdict_cases import B, N, complete, first, frame


# -- helpers ---------------------------------------------------------------------------------------------------

def test_verdict_rejects_an_unknown_outcome():
    assert V.Verdict("not measured (x)", "-", "t", "th").outcome == "not measured"
    with pytest.raises(ValueError):
        V.Verdict("maybe", "-", "t", "th")


def test_holm_is_the_step_down_adjustment():
    assert V.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert V.holm([0.2, 0.5]) == pytest.approx([0.4, 0.5])
    assert V.holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])  # clipped at 1, monotone
    assert V.holm([0.02]) == [0.02]


@pytest.mark.parametrize("summary, expected", [
    (complete(), None),
    (None, "missing seeds/summary.json: completeness unknown"),
    ({**complete(), "all_complete": False, "jobs": {"planned": 5, "complete": 4, "failed": 0, "missing": 1}},
     "incomplete seeds sweep: 4 of 5 jobs complete, 0 failed, 1 missing"),
    ({**complete(), "failed": ["dataset.seed=3"]}, "incomplete seeds sweep: 5 of 5 jobs complete, 1 failed, 0 missing"),
    ({**complete(), "missing": ["dataset.seed=4"]},
     "incomplete seeds sweep: 5 of 5 jobs complete, 0 failed, 1 missing"),
])
def test_sweep_problem(summary, expected):
    assert V.sweep_problem(summary, "seeds") == expected


def test_pooled_paired_is_the_cluster_permutation_test_on_the_joined_rows():
    df = frame(lambda system, seed, fam, q, **_: {"correct": q < (2 if system == "plain_cosine" else 2 + fam % 3)},
               ("plain_cosine", "smartvector"))
    r = V.pooled_paired(df, "plain_cosine", "smartvector", "correct", n_resamples=N)
    assert r.reason is None and r.n_seeds == 5 and r.n_clusters == 30 and r.n == 5 * 48
    assert r.mean_a == pytest.approx(0.25) and r.mean_b == pytest.approx(0.375)
    assert r.diff == pytest.approx(0.125)
    test = df[df.split == "test"].sort_values(["job", "query_id"])
    a = test[test.system == "plain_cosine"]
    b = test[test.system == "smartvector"]
    direct = paired_cluster_permutation_test(a.correct.to_numpy(), b.correct.to_numpy(),
                                             list(zip(a.dataset_seed, a.family)), n_resamples=N)
    assert r.p_value == pytest.approx(direct["p_value"])
    assert V.pooled_paired(df, "smartvector", "plain_cosine", "correct", n_resamples=N).diff == pytest.approx(-0.125)


def test_pooled_paired_across_groups_pairs_queries_of_the_same_seed():
    df = frame(lambda system, q, weights, **_: {"correct": q < {"paper": 2, "no_confidence": 5}[weights]},
               ("smartvector",), groups=({"weights": "paper"}, {"weights": "no_confidence"}))
    r = V.pooled_paired(df, "smartvector", "smartvector", "correct",
                        group=({"weights": "paper"}, {"weights": "no_confidence"}), n_resamples=N)
    assert r.reason is None and r.n == 5 * 48 and r.diff == pytest.approx(3 / 8)
    assert r.p_value == pytest.approx(2 / (N + 1))


@pytest.mark.parametrize("case, reason", [
    ("none", "missing queries.csv"),
    ("no system", "no rows of smartvector (split test)"),
    ("three seeds", "3 seed(s) with both plain_cosine (split test) and smartvector (split test), fewer than 5"),
    ("a seed without smartvector", "4 seed(s) with both plain_cosine (split test) and smartvector (split test), "
                                   "fewer than 5"),
    ("duplicates", "duplicate rows per job x query_id in queries.csv"),
    ("no family column", "queries.csv lacks column(s) family"),
    ("a missing outcome", "queries.csv has missing or non-0/1 values in correct"),
    ("a missing seed label", "queries.csv has rows without a dataset_seed"),
])
def test_pooled_paired_says_why_nothing_was_measured(case, reason):
    df = frame(first({"plain_cosine": 2, "smartvector": 5}), ("plain_cosine", "smartvector"))
    if case == "none":
        df = None
    elif case == "no system":
        df = df[df.system != "smartvector"]
    elif case == "three seeds":
        df = df[df.dataset_seed <= 3]
    elif case == "a seed without smartvector":
        df = df[~((df.system == "smartvector") & (df.dataset_seed == 5))]
    elif case == "duplicates":
        df = pd.concat([df, df.iloc[[-1]]])
    elif case == "no family column":
        df = df.drop(columns="family")
    elif case == "a missing seed label":
        df = df.astype({"dataset_seed": object})
        df.iloc[0, df.columns.get_loc("dataset_seed")] = None
    elif case == "a missing outcome":
        df = df.astype({"correct": object})
        df.iloc[-1, df.columns.get_loc("correct")] = None
    r = V.pooled_paired(df, "plain_cosine", "smartvector", "correct", n_resamples=N)
    assert r.reason == reason and r.p_value is None


def test_a_missing_confidence_counts_as_zero():
    df = frame(lambda system, q, **_: {"correct": q < 3, "confidence": "" if system == "smartvector" else 0.25},
               ("plain_cosine", "smartvector"))
    r = V.pooled_bootstrap(df, "plain_cosine", "smartvector", "brier", n_boot=B)
    assert r.value_b == pytest.approx(3 / 8)          # confidence 0: squared error 1 on the 3/8 correct
    assert r.value_a == pytest.approx(5 / 8 * 0.25 ** 2 + 3 / 8 * 0.75 ** 2)


def test_pooled_bootstrap_interval_and_calibration_per_seed():
    conf = {"plain_cosine": lambda ok: 0.9, "smartvector": lambda ok: 0.8 if ok else 0.1}
    df = frame(lambda system, q, **_: {"correct": q < 2, "confidence": conf[system](q < 2)},
               ("plain_cosine", "smartvector"))
    r = V.pooled_bootstrap(df, "plain_cosine", "smartvector", "auroc", n_boot=B)
    assert (r.value_a, r.value_b) == (pytest.approx(0.5), pytest.approx(1.0)) and r.higher and not r.lower
    r = V.pooled_bootstrap(df, "plain_cosine", "smartvector", "ece", n_boot=B)
    assert r.value_a == pytest.approx(0.65) and r.lower and r.ci[1] < 0
    cal = V.pooled_bootstrap(df, "plain_cosine", "smartvector", "ece", calibrate="platt", n_boot=B)
    assert cal.reason is None and cal.value_a < 0.05  # a constant 0.9 maps to ~the dev accuracy
    nodev = V.pooled_bootstrap(df[df.split == "test"], "plain_cosine", "smartvector", "ece", calibrate="platt",
                               n_boot=B)
    assert nodev.reason == "no rows of plain_cosine (split dev)"
    one = frame(lambda system, seed, fam, q, **_: {
        "correct": q < 2, "confidence": 0.95 if system == "smartvector" and seed == 1 and fam == 0 and q < 2 else 0.9},
        ("plain_cosine", "smartvector"))
    r = V.pooled_bootstrap(one, "plain_cosine", "smartvector", "auroc", n_boot=B)
    assert r.diff > 0 and r.ci[0] == 0 and not r.higher  # higher in one cluster of 30: no evidence
    bad = df.assign(confidence=np.where(df.system == "smartvector", 1.5, 0.9))
    assert V.pooled_bootstrap(bad, "plain_cosine", "smartvector", "ece", n_boot=B).reason.startswith(
        "invalid confidences")
