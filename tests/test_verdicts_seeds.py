"""The verdict rules of the claims judged on the seeds sweep (top-1 doubles, the stale rate falls, ECE falls) on
small synthetic per-query outcomes: every branch (holds / partly / does not hold / not measured), with the exact
verdict asserted."""

from __future__ import annotations

import pytest

from smartvector_bench.core.evaluation import verdicts as V

from .verdict_cases import B, FAST, N, complete, first, frame


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
