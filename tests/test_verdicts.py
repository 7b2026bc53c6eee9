"""The claims table's verdict rules (smartvector_bench/core/verdicts.py) on small synthetic per-query outcomes: every
branch of every rule (holds / partly / does not hold / not measured), with the exact verdict asserted.

Outcomes are built so that the paired tests are clear-cut: "system X answers the first k of the 8 queries of
each family", so a difference has the same sign in every (seed, family) cluster (p = 2 / (N + 1) with N random
sign patterns) or in a single cluster (p ~ 1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from smartvector_bench.core import verdicts as V
from smartvector_bench.core.metrics.clustered import paired_cluster_permutation_test

N = 200          # sign patterns: the smallest p is 2 / 201 ~ 0.00995
B = 200          # bootstrap resamples
FAST = {"n_resamples": N}
SEEDS = (1, 2, 3, 4, 5)
FAMILIES, PER_FAMILY = 6, 8


def complete(jobs: int = 5) -> dict:
    return {"all_complete": True, "failed": [], "missing": [],
            "jobs": {"planned": jobs, "complete": jobs, "failed": 0, "missing": 0, "skipped": 0}}


def frame(outcome, systems, seeds=SEEDS, groups=({},), job0: int = 0) -> pd.DataFrame:
    """One row per job x system x query; ``outcome(system, seed, fam, q, split, **group)`` gives the row's
    ``correct`` / ``stale`` / ``confidence`` (a missing confidence is written as "", as in queries.csv)."""
    rows, job = [], job0
    for group in groups:
        for seed in seeds:
            for system in systems:
                for split in ("dev", "test"):
                    for fam in range(FAMILIES):
                        for q in range(PER_FAMILY):
                            o = outcome(system=system, seed=seed, fam=fam, q=q, split=split, **group)
                            rows.append({"job": job, "job_dir": ",".join([f"dataset.seed={seed}"] +
                                                                          [f"{k}={v}" for k, v in group.items()]),
                                         **group, "dataset.seed": seed, "dataset_seed": seed, "system": system,
                                         "query_id": f"{split}-{fam}-{q}", "split": split, "family": f"fam{fam}",
                                         "category": "current", "correct": int(o.get("correct", 0)),
                                         "stale": int(o.get("stale", 0)), "rumor": 0,
                                         "confidence": o.get("confidence", "")})
            job += 1
    return pd.DataFrame(rows)


def first(k: dict):
    """``system`` answers the first ``k[system]`` queries of every family."""
    return lambda system, q, **_: {"correct": q < k[system]}


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


# -- 1. top-1 doubles ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("k, verdict", [
    ({"plain_cosine": 2, "smartvector": 5}, "holds"),          # x2.5, every cluster higher
    ({"plain_cosine": 4, "smartvector": 5}, "partly"),         # x1.25, significant
    ({"plain_cosine": 3, "smartvector": 3}, "does not hold"),  # equal
    ({"plain_cosine": 5, "smartvector": 2}, "does not hold"),  # significantly lower
])
def test_top1_rule(k, verdict):
    v = V.top1_doubles(frame(first(k), ("plain_cosine", "smartvector")), complete(), **FAST)
    assert v.verdict == verdict
    assert v.figure.startswith(f"5 seeds pooled (240 test queries): {100 * k['plain_cosine'] / 8:.1f}% -> ")
    assert "30 (seed, family) test clusters pooled across 5 seeds" in v.test
    assert v.p_value == (1.0 if k["plain_cosine"] == k["smartvector"] else pytest.approx(2 / (N + 1)))
    assert "ratio >= 1.5 and p < 0.05" in v.threshold and v.detail == V.TOP1_RULE


def test_top1_is_higher_in_one_cluster_only_does_not_hold():
    df = frame(lambda system, seed, fam, q, **_: {"correct": q < (3 if system == "smartvector" and seed == 1
                                                                  and fam == 0 else 1)},
               ("plain_cosine", "smartvector"))
    v = V.top1_doubles(df, complete(), **FAST)
    assert v.verdict == "does not hold" and v.p_value > 0.5  # ratio 1.07, p ~ 1


@pytest.mark.parametrize("case, reason", [
    ("three seeds", "3 seed(s) with both plain_cosine (split test) and smartvector (split test), fewer than 5"),
    ("a seed missing", "4 seed(s) with both plain_cosine (split test) and smartvector (split test), fewer than 5"),
    ("incomplete", "incomplete seeds sweep: 4 of 5 jobs complete, 1 failed, 0 missing"),
    ("no csv", "missing seeds/queries.csv"),
    ("no summary", "missing seeds/summary.json: completeness unknown"),
    ("no plain_cosine", "no rows of plain_cosine (split test)"),
])
def test_top1_not_measured(case, reason):
    df = frame(first({"plain_cosine": 2, "smartvector": 5}), ("plain_cosine", "smartvector"))
    summary = complete()
    if case == "three seeds":
        df = df[df.dataset_seed <= 3]
    elif case == "a seed missing":  # the old rule counted a missing seed as "higher"
        df = df[~((df.system == "smartvector") & (df.dataset_seed == 2))]
    elif case == "incomplete":
        summary = {**complete(), "all_complete": False, "failed": ["dataset.seed=5"],
                   "jobs": {"planned": 5, "complete": 4, "failed": 1, "missing": 0}}
    elif case == "no csv":
        df = None
    elif case == "no summary":
        summary = None
    elif case == "no plain_cosine":
        df = df[df.system != "plain_cosine"]
    v = V.top1_doubles(df, summary, **FAST)
    assert v.verdict == f"not measured ({reason})" and v.p_value is None


def _main(top1_pc, top1_sv, n=70):
    def split(t, p):
        return {"top1": t, "top1_ci": [t - 0.1, t + 0.1], "n_queries": n, "mcnemar_p": p, "permutation_p": p}
    return {"systems": {"plain_cosine": {"test": split(top1_pc, None)},
                        "smartvector": {"test": split(top1_sv, 0.012)},
                        "valid_cosine": {"test": split(0.7, 0.001)}}}


def test_top1_figure_quotes_the_seed_42_runs():
    df = frame(first({"plain_cosine": 2, "smartvector": 5}), ("plain_cosine", "smartvector"))
    v = V.top1_doubles(df, complete(), _main(0.3, 0.4), _main(0.2, 0.1, n=574), **FAST)
    assert v.verdict == "holds"
    assert ("seed 42 (70 test queries): 30.0% [20.0, 40.0] -> 40.0% [30.0, 50.0] (McNemar p 0.012, cluster "
            "permutation p 0.012)") in v.figure
    assert "large profile, seed 42 (574 test queries): 20.0% [10.0, 30.0] -> 10.0%" in v.figure
    assert "valid_cosine (validity window + cosine) 70.0%" in v.figure
    nm = V.top1_doubles(None, None, _main(0.3, 0.62), None, **FAST)  # the seed-42 run alone decides nothing
    assert nm.verdict == "not measured (missing seeds/queries.csv)" and "seed 42 (70 test queries)" in nm.figure


# -- 2. stale rate ---------------------------------------------------------------------------------------------

SOFT = ("plain_cosine", "smartvector", "smartvector_soft")


def stale(pc, soft, hard=lambda **_: False):
    rules = {"plain_cosine": pc, "smartvector_soft": soft, "smartvector": hard}
    return lambda system, **kw: {"correct": kw["q"] < 2, "stale": rules[system](**kw)}


def test_stale_rule_holds_and_marks_the_hard_filter():
    df = frame(stale(lambda q, **_: q >= 6, lambda q, **_: q >= 7), SOFT)
    v = V.stale_rate_falls(df, complete(), **FAST)
    assert v.verdict == "holds" and v.p_value == pytest.approx(2 / (N + 1))
    assert v.figure.startswith("5 seeds pooled: plain_cosine 25.0% -> smartvector_soft 12.5% (-12.5 pts)")
    assert "hard smartvector 0.0% (0 by construction (status filter))" in v.figure


def test_stale_rule_partly_and_does_not_hold():
    one = stale(lambda seed, fam, q, **_: seed == 1 and fam == 0 and q == 0, lambda **_: False,
                lambda q, **_: q == 7)
    v = V.stale_rate_falls(frame(one, SOFT), complete(), **FAST)
    assert v.verdict == "partly" and v.p_value >= 0.05  # lower in one cluster only
    assert "hard smartvector 12.5% (superseded versions removed" in v.figure and "by construction" not in v.figure
    same = stale(lambda q, **_: q >= 6, lambda q, **_: q >= 6)
    assert V.stale_rate_falls(frame(same, SOFT), complete(), **FAST).verdict == "does not hold"
    never = stale(lambda **_: False, lambda **_: False)  # nothing stale anywhere: no "by construction" either
    v = V.stale_rate_falls(frame(never, SOFT), complete(), **FAST)
    assert v.verdict == "does not hold" and v.p_value == 1.0 and "by construction" not in v.figure
    higher = stale(lambda q, **_: q >= 7, lambda q, **_: q >= 5)
    assert V.stale_rate_falls(frame(higher, SOFT), complete(), **FAST).verdict == "does not hold"


def test_stale_rule_needs_the_soft_variant():
    df = frame(stale(lambda q, **_: q >= 6, lambda **_: False), ("plain_cosine", "smartvector"))
    v = V.stale_rate_falls(df, complete(), **FAST)
    assert v.verdict == "not measured (no rows of smartvector_soft (split test))"
    v = V.stale_rate_falls(df, {**complete(), "missing": ["x"]}, **FAST)
    assert v.verdict.startswith("not measured (incomplete seeds sweep")


# -- 3. ECE ----------------------------------------------------------------------------------------------------

def calib(pc, sv):
    confs = {"plain_cosine": pc, "smartvector": sv}
    return lambda system, q, **_: {"correct": q < 2, "confidence": confs[system](q < 2)}


@pytest.mark.parametrize("pc, sv, verdict, a, b", [
    # pc: constant 0.9 (ECE 0.65, AUROC 0.5); sv: 0.8 / 0.1 (ECE 0.125, AUROC 1)
    (lambda ok: 0.9, lambda ok: 0.8 if ok else 0.1, "holds", "yes", "yes"),
    # sv: constant 0.25 = its accuracy: ECE ~0 but no discrimination, and after Platt both are the same
    (lambda ok: 0.9, lambda ok: 0.25, "partly", "yes", "no"),
    # pc: constant at its accuracy (ECE 0); sv: discriminates (AUROC 1) on an overconfident scale (ECE 0.46)
    (lambda ok: 0.25, lambda ok: 0.95 if ok else 0.6, "partly", "no", "yes"),
    # the same confidences: every difference is 0
    (lambda ok: 0.8 if ok else 0.1, lambda ok: 0.8 if ok else 0.1, "does not hold", "no", "no"),
    # sv overconfident without discrimination; after Platt both are the same constant
    (lambda ok: 0.25, lambda ok: 0.9, "does not hold", "no", "no"),
])
def test_ece_rule(pc, sv, verdict, a, b):
    v = V.ece_falls(frame(calib(pc, sv), ("plain_cosine", "smartvector")), complete(), n_boot=B)
    assert v.verdict == verdict and v.p_value is None
    assert f"(a) {a}, (b) {b}" in v.figure
    for what in ("ECE ", "Platt-calibrated ECE ", "Brier ", "AUROC "):
        assert what in v.figure
    assert "paired cluster bootstrap (200 resamples" in v.test and "excludes 0" in v.threshold


def test_ece_lower_in_one_cluster_only_is_no_evidence():
    def outcome(system, seed, fam, q, **_):
        one = system == "smartvector" and seed == 1 and fam == 0
        return {"correct": q < 2, "confidence": 0.25 if one else 0.9}

    v = V.ece_falls(frame(outcome, ("plain_cosine", "smartvector")), complete(), n_boot=B)
    assert v.verdict == "does not hold" and "(a) no, (b) no" in v.figure
    assert "ECE 0.650 -> 0.628" in v.figure  # lower, but its interval reaches 0


def test_ece_rule_counts_calibrated_ece_as_b():
    """Test confidences (hence raw ECE and AUROC) the same for both; plain_cosine's dev confidences are inverted,
    so the Platt map fitted on its dev rows ruins its test calibration: (b) by calibrated ECE alone."""
    def outcome(system, q, split, **_):
        ok = q < 2
        inverted = system == "plain_cosine" and split == "dev"
        return {"correct": ok, "confidence": (0.1 if ok else 0.8) if inverted else (0.8 if ok else 0.1)}

    v = V.ece_falls(frame(outcome, ("plain_cosine", "smartvector")), complete(), n_boot=B)
    assert v.verdict == "partly" and "(a) no, (b) yes" in v.figure
    assert "AUROC 1.000 -> 1.000 [+0.000, +0.000]" in v.figure


def test_ece_rule_not_measured():
    df = frame(calib(lambda ok: 0.9, lambda ok: 0.25), ("plain_cosine", "smartvector"))
    v = V.ece_falls(df[df.dataset_seed <= 4], complete(), n_boot=B)
    assert v.verdict.startswith("not measured (4 seed(s) with both")
    v = V.ece_falls(df[df.split == "test"], complete(), n_boot=B)  # no dev rows to fit the Platt map
    assert v.verdict == "not measured (no rows of plain_cosine (split dev))"
    assert V.ece_falls(df, None, n_boot=B).verdict == "not measured (missing seeds/summary.json: completeness unknown)"


# -- 4. contradiction rates ------------------------------------------------------------------------------------

KEY = "dataset.contradiction_rate"


def rates(k_of, values=(0.0, 0.5), seeds_of=lambda rate: SEEDS) -> pd.DataFrame:
    """``k_of(system, rate)`` correct answers per family at each contradiction rate."""
    parts, job = [], 0
    for rate in values:
        seeds = seeds_of(rate)
        parts.append(frame(lambda system, q, **kw: {"correct": q < k_of(system, kw[KEY])},
                           ("plain_cosine", "smartvector"), seeds=seeds, groups=({KEY: rate},), job0=job))
        job += len(seeds)
    return pd.concat(parts, ignore_index=True)


@pytest.mark.parametrize("sv, verdict", [
    ({0.0: 5, 0.5: 5}, "holds"),             # 62.5% at both rates
    ({0.0: 4, 0.5: 6}, "partly"),            # above at both and >= 50%, but 25 points apart
    ({0.0: 3, 0.5: 3}, "partly"),            # above at both and stable, but 37.5% < 50%
    ({0.0: 5, 0.5: 2}, "does not hold"),     # equal to plain at 0.5
    ({0.0: 5, 0.5: 1}, "does not hold"),     # significantly below plain at 0.5
])
def test_contradiction_rule(sv, verdict):
    df = rates(lambda system, rate: 2 if system == "plain_cosine" else sv[rate])
    v = V.robust_across_contradiction(df, complete(10), **FAST)
    assert v.verdict == verdict
    expected = [2 / (N + 1) if sv[r] != 2 else 1.0 for r in (0.0, 0.5)]
    assert v.p_value == pytest.approx(max(V.holm(expected)))
    assert "over 2 rates" in v.figure and "Holm-adjusted over rates" in v.test


def test_contradiction_rule_adjusts_for_the_number_of_rates():
    values = tuple(i / 10 for i in range(8))
    df = rates(lambda system, rate: 2 if system == "plain_cosine" else 5, values)
    # every raw p is 2 / 201 ~ 0.00995 < 0.05; Holm over 8 rates makes each 0.0796
    v = V.robust_across_contradiction(df, complete(40), **FAST)
    assert v.verdict == "does not hold" and v.p_value == pytest.approx(8 * 2 / (N + 1))
    assert V.robust_across_contradiction(df, complete(40), n_resamples=2000).verdict == "holds"


def test_contradiction_rule_not_measured():
    df = rates(lambda system, rate: 2 if system == "plain_cosine" else 5,
               seeds_of=lambda rate: SEEDS if rate == 0.0 else (1, 2, 3))
    v = V.robust_across_contradiction(df, complete(8), **FAST)
    assert v.verdict == ("not measured (rate 0.5: 3 seed(s) with both plain_cosine (split test, "
                         "dataset.contradiction_rate=0.5) and smartvector (split test, "
                         "dataset.contradiction_rate=0.5), fewer than 5)")
    assert V.robust_across_contradiction(None, None).verdict == \
        "not measured (missing contradiction_sweep/queries.csv)"
    v = V.robust_across_contradiction(df.drop(columns=KEY), complete(8), **FAST)
    assert v.verdict == f"not measured (contradiction_sweep/queries.csv lacks the swept column {KEY})"


# -- 5-6. ablation ---------------------------------------------------------------------------------------------

PRESETS = ("paper", "no_semantic", "no_temporal", "no_confidence", "no_relational")


def ablation(k: dict, seeds=SEEDS, presets=PRESETS, one_cluster: dict | None = None) -> pd.DataFrame:
    """smartvector answers the first ``k[preset]`` queries of every family (``one_cluster[preset]`` instead in
    seed 1, family 0); plain_cosine 1 of 8 everywhere."""
    def outcome(system, seed, fam, q, weights, **_):
        if system == "plain_cosine":
            return {"correct": q < 1}
        n = k[weights]
        if one_cluster and weights in one_cluster and seed == 1 and fam == 0:
            n = one_cluster[weights]
        return {"correct": q < n}
    return frame(outcome, ("plain_cosine", "smartvector"), seeds=seeds, groups=tuple({"weights": p} for p in presets))


BASE = {"paper": 5, "no_semantic": 4, "no_temporal": 1, "no_confidence": 4, "no_relational": 4}


@pytest.mark.parametrize("k, verdict", [
    (BASE, "holds"),                                           # temporal costs 4/8, the others 1/8
    ({**BASE, "no_temporal": 3, "no_semantic": 1}, "partly"),  # temporal costs 2/8, semantic more
    ({**BASE, "no_temporal": 3, "no_semantic": 3}, "partly"),  # tied with semantic: not the largest
    ({**BASE, "no_temporal": 5}, "does not hold"),             # dropping temporal costs nothing
    ({**BASE, "no_temporal": 6}, "does not hold"),             # dropping temporal helps
])
def test_temporal_rule(k, verdict):
    v = V.temporal_largest(ablation(k), complete(25), **FAST)
    assert v.verdict == verdict
    assert f"temporal {100 * (k['no_temporal'] - 5) / 8:+.1f} pts" in v.figure
    if verdict == "holds":  # the largest p of the four comparisons it rests on
        assert v.p_value == pytest.approx(2 / (N + 1))


def test_temporal_rule_drop_in_one_cluster_only_does_not_hold():
    v = V.temporal_largest(ablation({**BASE, "no_temporal": 5}, one_cluster={"no_temporal": 1}), complete(25),
                           **FAST)
    assert v.verdict == "does not hold" and v.p_value > 0.5  # lower, but not significantly


def test_temporal_rule_not_measured():
    v = V.temporal_largest(ablation(BASE, presets=PRESETS[:-1]), complete(20), **FAST)
    assert v.verdict == "not measured (no rows of smartvector (split test, weights=no_relational))"
    v = V.temporal_largest(ablation(BASE, seeds=(1, 2, 3)), complete(15), **FAST)
    assert v.verdict.startswith("not measured (3 seed(s) with both smartvector (split test, weights=paper)")
    v = V.temporal_largest(ablation(BASE), {**complete(25), "all_complete": False}, **FAST)
    assert v.verdict.startswith("not measured (incomplete ablation sweep")


@pytest.mark.parametrize("k, one, verdict", [
    ({**BASE, "paper": 3, "no_confidence": 5}, None, "holds"),
    ({**BASE, "paper": 3, "no_confidence": 3}, {"no_confidence": 4}, "partly"),  # higher in one cluster only
    ({**BASE, "paper": 3, "no_confidence": 3}, None, "does not hold"),
    ({**BASE, "paper": 3, "no_confidence": 2}, None, "does not hold"),
])
def test_confidence_rule(k, one, verdict):
    v = V.confidence_removal_raises(ablation(k, one_cluster=one), complete(25), **FAST)
    assert v.verdict == verdict
    assert v.figure.startswith("5 seeds pooled: 37.5% with it, ")
    if verdict == "partly":
        assert v.p_value >= 0.05


def test_confidence_rule_not_measured():
    k = {**BASE, "paper": 3, "no_confidence": 5}
    v = V.confidence_removal_raises(ablation(k, seeds=(1, 2, 3, 4)), complete(20), **FAST)
    assert v.verdict.startswith("not measured (4 seed(s) with both smartvector (split test, weights=paper) and "
                                "smartvector (split test, weights=no_confidence), fewer than 5")
    v = V.confidence_removal_raises(ablation(k), {**complete(25), "failed": ["j"]}, **FAST)
    assert v.verdict == "not measured (incomplete ablation sweep: 25 of 25 jobs complete, 1 failed, 0 missing)"
    assert V.confidence_removal_raises(None, complete()).verdict == "not measured (missing ablation/queries.csv)"


# -- 7. re-embedding -------------------------------------------------------------------------------------------

def reembed(surgical_big=1.0, full_big=4.2, equivalent=True, buckets=True) -> dict:
    def strategy(sw, big):
        s = {"by_edit_type": {"single_word": {"chunks_reembedded_mean": sw, "n_edits": 119}},
             "equivalent_to_rebuild": {"equivalent": equivalent}}
        if buckets:
            s["single_word_by_document_chunks"] = {"4+": {"chunks_reembedded_mean": big}}
        return s
    return {"strategies": {"full": strategy(2.0, full_big), "surgical": strategy(1.0, surgical_big)}}


@pytest.mark.parametrize("doc, verdict", [
    (reembed(), "holds"),
    (reembed(surgical_big=1.5), "partly"),           # more than 1.1 chunks
    (reembed(full_big=3.0), "partly"),               # 67% less, under 70%
    (reembed(equivalent=False), "partly"),           # the index differs from a rebuild
    (reembed(buckets=False), "partly"),              # no 4+ chunk documents to judge at the paper's size
    (None, "not measured (missing reembed_cost/reembed_cost.json)"),
])
def test_reembed_rule(doc, verdict):
    v = V.reembed_single_word(doc)
    assert v.verdict == verdict and v.p_value is None
    assert v.test.startswith("exact counts over every edit of the edit set")
    if doc is not None:
        assert "119 single-word edits" in v.test


# -- 8. feedback -----------------------------------------------------------------------------------------------

def feedback(live=0.5, frozen=0.3, p=0.001, permutation=None) -> dict:
    summ = {"smartvector_live": {"top1_first": 0.3, "top1_last": live},
            "smartvector_frozen": {"top1_first": 0.3, "top1_last": frozen},
            "last_round_mcnemar_live_vs": {"smartvector_frozen": {"p_value": p}}}
    if permutation is not None:
        summ["last_round_permutation_live_vs"] = {"smartvector_frozen": {"p_value": permutation}}
    return {"summary": summ}


@pytest.mark.parametrize("doc, verdict, p", [
    (feedback(), "holds", 0.001),
    (feedback(p=0.2), "partly", 0.2),
    (feedback(live=0.2), "does not hold", 0.001),
    (feedback(p=0.001, permutation=0.3), "partly", 0.3),  # a cluster permutation, when written, decides
    (None, "not measured (missing feedback_loop/feedback_loop.json)", None),
])
def test_feedback_rule(doc, verdict, p):
    v = V.feedback_improves(doc)
    assert v.verdict == verdict and v.p_value == p
    if doc is not None and "last_round_permutation_live_vs" not in doc["summary"]:
        assert v.test == "exact McNemar on the last round's discordant held-out queries (queries independent)"


# -- 9-14. LiveVectorLake --------------------------------------------------------------------------------------

def lvl(verdict="holds", drop=None, drop_figure=None) -> dict:
    lat = {"p50": 20.0, "p95": 30.0, "p99": 40.0, "n": 500}
    claims = {
        "reprocessing_share": {"ours_mean_per_document": 0.09, "ours_ci": [0.08, 0.1]},
        "hot_latency_ms": {"ours_with_embedding": lat, "ours_query_only": {**lat, "p50": 0.09}},
        "cold_latency_ms": {"ours_uncached_with_embedding": {**lat, "p50": 345.0}},
        "change_detection_accuracy": {"ours_must_embed": {"precision": 1.0, "recall": 1.0},
                                      "ours_class_agreement": 0.98,
                                      "ours_deletions": {"precision": 0.8, "recall": 0.9}},
        "temporal_accuracy": {"ours_historical_top1": 0.77, "ours_historical_top1_ci": [0.68, 0.85],
                              "ours_current_top1": 0.72},
        "temporal_leakage": {"ours": 0.0},
    }
    for c in claims.values():
        c.update(verdict=verdict, rule="the rule of lvl_eval.py")
    if drop:
        del claims[drop]
    if drop_figure:
        name, key = drop_figure
        del claims[name][key]
    return {"claims": claims, "reembedding": {"all_steps": {"n": 400}}, "temporal": {"historical": {"n": 100}}}


NAMES = ("reprocessing_share", "hot_latency_ms", "cold_latency_ms", "change_detection_accuracy",
         "temporal_accuracy", "temporal_leakage")
FIGURE_KEYS = ("ours_mean_per_document", "ours_with_embedding", "ours_uncached_with_embedding", "ours_must_embed",
               "ours_historical_top1", "ours")


@pytest.mark.parametrize("i", range(6))
@pytest.mark.parametrize("verdict", ["holds", "partly", "does not hold"])
def test_lvl_rules_restate_lvl_eval(i, verdict):
    v = V.LVL_RULES[i](lvl(verdict))
    assert v.verdict == verdict and v.detail == "the rule of lvl_eval.py" and v.p_value is None
    assert v.test and v.threshold


@pytest.mark.parametrize("i", range(6))
def test_lvl_rules_not_measured(i):
    rule, name = V.LVL_RULES[i], NAMES[i]
    assert rule(None).verdict == "not measured (missing lvl_eval/lvl_eval.json)"
    assert rule(lvl(drop=name)).verdict == f"not measured (no {name} in lvl_eval/lvl_eval.json)"
    assert rule(lvl(drop_figure=(name, FIGURE_KEYS[i]))).verdict == \
        f"not measured (a figure of {name} is missing from lvl_eval/lvl_eval.json)"
    assert rule(lvl("not comparable")).verdict == "not measured (lvl_eval says not comparable)"


def test_lvl_tests_name_what_they_rest_on():
    d = lvl()
    assert "(400 steps), 95% bootstrap CI over documents" in V.lvl_reprocessing(d).test
    assert "of 500 hot-query timings" in V.lvl_hot_latency(d).test
    assert "p50 (np.quantile, linear) of 500 uncached" in V.lvl_cold_latency(d).test
    assert V.lvl_change_detection(d).test.startswith("exact counts")
    assert "top-1 over 100 historical queries, 95% bootstrap CI" in V.lvl_temporal_accuracy(d).test
    assert V.lvl_temporal_leakage(d).test.startswith("exact count")
