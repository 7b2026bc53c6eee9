"""evaluate_split on a hand-made, corpus-free example whose every number is worked out by hand."""

import json

import numpy as np
import pytest

from smartvector_bench.csr import Ragged
from smartvector_bench.dataset import Queries
from smartvector_bench.evaluator import evaluate_split, judge
from smartvector_bench.metrics import bootstrap_mean_ci
from smartvector_bench.run import Run

_ = -1  # padding

# q  split category          gold stale    rumor  ranked (k = 8)                conf  outcome
# 0  dev   current           0    []       []     0 5 6                         0.90  correct, rr 1, r5 1
# 1  dev   recently_updated  1    [2]      []     2 7 1                         0.80  stale,   rr 1/3, r5 1
# 2  dev   contested         3    []       [4]    4 8 9 10 11 12 3              0.35  rumour,  rr 1/7, r5 0
# 3  dev   current           13   []       []     (nothing)                     NaN   wrong,   rr 0, r5 0
# 4  dev   recently_updated  14   [15, 16] []     14 15                         0.30  correct, rr 1, r5 1
# 5  test  current           0    []       []     0                             1.00  correct, rr 1, r5 1
# 6  test  contested         3    []       [4]    4 3                           0.60  rumour,  rr 1/2, r5 1
# 7  test  current           1    [2]      []     9 8                           0.10  wrong,   rr 0, r5 0
RANKED = np.array([
    [0, 5, 6, _, _, _, _, _],
    [2, 7, 1, _, _, _, _, _],
    [4, 8, 9, 10, 11, 12, 3, _],
    [_, _, _, _, _, _, _, _],
    [14, 15, _, _, _, _, _, _],
    [0, _, _, _, _, _, _, _],
    [4, 3, _, _, _, _, _, _],
    [9, 8, _, _, _, _, _, _],
], dtype=np.int64)
CONF = np.array([0.9, 0.8, 0.35, np.nan, 0.3, 1.0, 0.6, 0.1])
# Baseline correctness for all 8 queries (both splits). On dev vs this run's [1,0,0,0,1]:
# b = baseline right & run wrong = q1, q2, q3 -> 3; c = baseline wrong & run right = q4 -> 1.
BASELINE = np.array([1, 1, 1, 1, 0, 0, 1, 1], dtype=bool)


def make_queries() -> Queries:
    n = 8
    return Queries(
        ids=[f"q{i}" for i in range(n)], texts=[f"query {i}" for i in range(n)],
        query_time=np.zeros(n), as_of=np.zeros(n),
        category=np.array(["current", "recently_updated", "contested", "current", "recently_updated",
                           "current", "contested", "current"], dtype=object),
        split=np.array(["dev"] * 5 + ["test"] * 3, dtype=object),
        gold=np.array([0, 1, 3, 13, 14, 0, 3, 1], dtype=np.int64),
        stale=Ragged.from_lists([[], [2], [], [], [15, 16], [], [], [2]]),
        rumor=Ragged.from_lists([[], [], [4], [], [], [], [4], []]),
    )


def make_run() -> Run:
    scores = np.where(RANKED >= 0, 1.0, np.nan)
    return Run(system="toy", ranked=RANKED, scores=scores, confidence=CONF)


def test_judge():
    j = judge(make_run(), make_queries())
    assert j["correct"].tolist() == [True, False, False, False, True, True, False, False]
    assert j["stale"].tolist() == [False, True, False, False, False, False, False, False]
    assert j["rumor"].tolist() == [False, False, True, False, False, False, True, False]
    assert j["rr10"].tolist() == pytest.approx([1, 1 / 3, 1 / 7, 0, 1, 1, 1 / 2, 0])
    assert j["r5"].tolist() == [1, 1, 0, 0, 1, 1, 1, 0]


def test_evaluate_dev_split():
    res = evaluate_split(make_run(), make_queries(), "dev", n_boot=200, seed=0)
    assert res["n_queries"] == 5          # the no-result query q3 counts
    assert res["top1"] == 0.4             # q0, q4 of 5
    assert res["stale_rate"] == 0.2       # q1 (top-1 = 2, superseded)
    assert res["rumor_rate"] == 0.2       # q2 (top-1 = 4, rumour)
    assert res["mrr_at_10"] == 0.495238   # (1 + 1/3 + 1/7 + 0 + 1) / 5 = 52/105
    assert res["recall_at_5"] == 0.6      # q0, q1, q4 (gold of q2 is at rank 7)
    # ECE: conf [0.9, 0.8, 0.35, NaN -> 0.0, 0.3], correct [1, 0, 0, 0, 1]
    #   bin 9 {0.9 right}:   |1 - 0.9|   * 1/5 = 0.02
    #   bin 8 {0.8 wrong}:   |0 - 0.8|   * 1/5 = 0.16
    #   bin 3 {0.35 wrong, 0.3 right (edge -> bin 3)}: |0.5 - 0.325| * 2/5 = 0.07
    #   bin 0 {0.0 wrong}:   |0 - 0|     * 1/5 = 0
    # = 0.25 (0.3 in bin 2 would give 0.39; dropping q3 would give 0.3125)
    assert res["ece"] == 0.25
    bins = res["ece_bins"]
    assert bins["counts"] == [1, 0, 0, 2, 0, 0, 0, 0, 1, 1]
    assert bins["accuracy"] == [0.0, None, None, 0.5, None, None, None, None, 0.0, 1.0]
    assert bins["mean_confidence"] == [0.0, None, None, 0.325, None, None, None, None, 0.8, 0.9]
    assert bins["edges"] == [i / 10 for i in range(11)]
    assert res["mcnemar"] is None and res["mcnemar_p"] is None


def test_intervals_are_seeded_percentile_bootstraps():
    q, run = make_queries(), make_run()
    res = evaluate_split(run, q, "dev", n_boot=200, seed=3)
    assert res == evaluate_split(run, q, "dev", n_boot=200, seed=3)
    # with 5 binary outcomes top1_ci takes few values; the continuous metrics show the seed changing
    other = evaluate_split(run, q, "dev", n_boot=200, seed=4)
    assert res["ece_ci"] != other["ece_ci"] and res["mrr_at_10_ci"] != other["mrr_at_10_ci"]
    # top1_ci is the seeded mean bootstrap of the dev correctness vector
    lo, hi = bootstrap_mean_ci(np.array([1, 0, 0, 0, 1], dtype=bool), n_boot=200, seed=3)
    assert res["top1_ci"] == [round(lo, 6), round(hi, 6)]
    for name in ("top1", "stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5"):
        low, high = res[name + "_ci"]
        assert 0.0 <= low <= res[name] <= high <= 1.0, name
        assert low < high, name   # 5 queries with mixed outcomes: the interval is not degenerate


def test_by_category():
    cat = evaluate_split(make_run(), make_queries(), "dev", n_boot=200)["by_category"]
    assert list(cat) == ["contested", "current", "recently_updated"]   # sorted by name
    # contested = {q2}: rumour, wrong, conf 0.35 -> ECE 0.35, rr 1/7
    assert cat["contested"] == {"n_queries": 1, "top1": 0.0, "stale_rate": 0.0, "rumor_rate": 1.0, "ece": 0.35,
                                "mrr_at_10": 0.142857, "recall_at_5": 0.0, "top1_ci": [0.0, 0.0]}
    # current = {q0 right @0.9, q3 no result @0.0}: ECE = 0.1 * 1/2 + 0 = 0.05, MRR (1 + 0)/2
    c = cat["current"]
    assert {k: v for k, v in c.items() if k != "top1_ci"} == {
        "n_queries": 2, "top1": 0.5, "stale_rate": 0.0, "rumor_rate": 0.0, "ece": 0.05,
        "mrr_at_10": 0.5, "recall_at_5": 0.5}
    assert 0.0 <= c["top1_ci"][0] <= 0.5 <= c["top1_ci"][1] <= 1.0
    # recently_updated = {q1 stale @0.8 wrong, q4 right @0.3}: ECE = (0.8 + 0.7) / 2 = 0.75, MRR (1/3 + 1)/2
    r = cat["recently_updated"]
    assert {k: v for k, v in r.items() if k != "top1_ci"} == {
        "n_queries": 2, "top1": 0.5, "stale_rate": 0.5, "rumor_rate": 0.0, "ece": 0.75,
        "mrr_at_10": 0.666667, "recall_at_5": 1.0}


def test_test_split_and_mcnemar():
    res = evaluate_split(make_run(), make_queries(), "test", baseline_correct=BASELINE, n_boot=200)
    assert res["n_queries"] == 3
    assert res["top1"] == 0.333333        # q5
    assert res["stale_rate"] == 0.0       # q7's top-1 is 9, not its stale 2
    assert res["rumor_rate"] == 0.333333  # q6
    assert res["mrr_at_10"] == 0.5        # (1 + 1/2 + 0) / 3
    assert res["recall_at_5"] == 0.666667
    assert res["ece"] == 0.233333         # (|1 - 1.0| + |0 - 0.6| + |0 - 0.1|) / 3 = 0.7 / 3
    # baseline on test [0, 1, 1] vs run [1, 0, 0]: b = 2 (q6, q7), c = 1 (q5);
    # p = 2 * P(X <= 1 | Bin(3, 1/2)) = 2 * 4/8 = 1.0
    assert res["mcnemar"] == {"p_value": 1.0, "b": 2, "c": 1, "n": 3}
    assert res["mcnemar_p"] == 1.0


def test_mcnemar_on_dev_uses_the_split_rows_of_the_aligned_baseline():
    res = evaluate_split(make_run(), make_queries(), "dev", baseline_correct=BASELINE, n_boot=50)
    # b = 3, c = 1 (see BASELINE): p = 2 * P(X <= 1 | Bin(4, 1/2)) = 2 * 5/16 = 0.625
    assert res["mcnemar"] == {"p_value": 0.625, "b": 3, "c": 1, "n": 5}
    assert res["mcnemar_p"] == 0.625


def test_result_is_json_ready():
    res = evaluate_split(make_run(), make_queries(), "dev", baseline_correct=BASELINE, n_boot=50)
    assert json.loads(json.dumps(res, allow_nan=False)) == res


def test_bad_inputs():
    q, run = make_queries(), make_run()
    with pytest.raises(ValueError, match="no queries"):
        evaluate_split(run, q, "train")
    with pytest.raises(ValueError, match="aligned"):
        evaluate_split(run, q, "dev", baseline_correct=BASELINE[:5])
    short = Run(system="short", ranked=RANKED[:4], scores=np.zeros((4, 8)), confidence=CONF[:4])
    with pytest.raises(ValueError, match="rows"):
        evaluate_split(short, q, "dev")
