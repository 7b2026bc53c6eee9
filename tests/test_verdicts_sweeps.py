"""The verdict rules of the claims judged on the contradiction and ablation sweeps (robust across contradiction
rates, temporal matters most, removing confidence raises top-1) on small synthetic per-query outcomes: every
branch, with the exact verdict asserted."""

from __future__ import annotations

import pandas as pd
import pytest

from smartvector_bench.core.evaluation import verdicts as V

from .verdict_cases import FAST, N, SEEDS, complete, frame


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
