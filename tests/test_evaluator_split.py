"""judge and evaluate_split on a hand-made, corpus-free example whose every number is worked out by hand (benchmark
v2: graded judgments with several relevant chunks per query, families as clusters)."""

import json
import math

import numpy as np
import pytest

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Queries
from smartvector_bench.core.evaluation.evaluator import evaluate_split, judge
from smartvector_bench.core.evaluation.metrics import (bootstrap_mean_ci, cluster_bootstrap_ci,
                                                       cluster_bootstrap_mean_ci, ece, leakage_rate)
from smartvector_bench.core.run import Run

from .evaluator_cases import CONF, FAMILY, GRADES, RANKED, RELEVANT, _, make_queries, make_run

L3 = math.log2(3)


# Baseline correctness for all 8 queries (both splits). On dev vs this run's [1,0,0,0,1]:
# b = baseline right & run wrong = q1, q2, q3 -> 3; c = baseline wrong & run right = q4 -> 1.
BASELINE = np.array([1, 1, 1, 1, 0, 0, 1, 1], dtype=bool)

# nDCG@10 (trec_eval: gain = grade, discount log2(rank + 1), ideal = the judged grades sorted)
NDCG = [
    (1 + 2 / L3) / (2 + 1 / L3),   # q0: grade 1 at rank 1, grade 2 at rank 2
    (2 / 2) / 2,                   # q1: grade 2 at rank 3
    (2 / 3) / 2,                   # q2: grade 2 at rank 7 (log2 8 = 3)
    0.0,                           # q3: nothing returned
    2 / (2 + 1 / L3),              # q4: grade 2 at rank 1, the grade-1 chunk 17 missing
    1.0,                           # q5
    (1 / L3 + 2 / 2) / (2 + 1 / L3),  # q6: grade 1 at rank 2, grade 2 at rank 3
    0.0,                           # q7
]


def test_gold_is_the_best_relevant_chunk_and_read_only():
    q = make_queries()
    assert q.gold.tolist() == [0, 1, 3, 13, 14, 0, 3, 1]
    with pytest.raises(AttributeError):
        q.gold = np.zeros(8, dtype=np.int64)


def test_judge():
    j = judge(make_run(), make_queries())
    # q0's top-1 is chunk 5, a grade-1 relevant chunk (not the gold 0): correct all the same
    assert j["correct"].tolist() == [True, False, False, False, True, True, False, False]
    assert j["stale"].tolist() == [False, True, False, False, False, False, False, False]
    assert j["rumor"].tolist() == [False, False, True, False, False, False, True, False]
    assert j["rr10"].tolist() == pytest.approx([1, 1 / 3, 1 / 7, 0, 1, 1, 1 / 2, 0])
    # R@5: share of the relevant chunks in the top 5 (q4: 14 of {14, 17}; q6: 18 and 3)
    assert j["r5"].tolist() == pytest.approx([1, 1, 0, 0, 0.5, 1, 1, 0])
    assert j["ndcg10"].tolist() == pytest.approx(NDCG, abs=1e-9)


def test_any_relevant_grade_counts_as_correct():
    q = make_queries()
    # every relevant chunk of q0 (grade 2: 0, grade 1: 5) at the top is correct; a non-relevant one is not
    for top, want in ((0, True), (5, True), (6, False)):
        ranked = RANKED.copy()
        ranked[0] = [top, _, _, _, _, _, _, _]
        run = Run("t", ranked, np.where(ranked >= 0, 1.0, np.nan), CONF)
        assert bool(judge(run, q)["correct"][0]) is want, top
    # the same when the grade-1 chunk is the only relevant one of the query
    q.relevant = Ragged.from_lists([[5]] + RELEVANT[1:])
    q.grades = Ragged.from_lists([[1]] + GRADES[1:])
    assert bool(judge(make_run(), q)["correct"][0])


def test_evaluate_dev_split():
    res = evaluate_split(make_run(), make_queries(), "dev", n_boot=200, seed=0)
    assert res["n_queries"] == 5          # the no-result query q3 counts
    assert res["n_families"] == 3         # A, B, C
    assert res["top1"] == 0.4             # q0, q4 of 5
    assert res["stale_rate"] == 0.2       # q1 (top-1 = 2, superseded)
    assert res["rumor_rate"] == 0.2       # q2 (top-1 = 4, rumor)
    assert res["mrr_at_10"] == 0.495238   # (1 + 1/3 + 1/7 + 0 + 1) / 5 = 52/105
    assert res["recall_at_5"] == 0.5      # (1 + 1 + 0 + 0 + 1/2) / 5
    assert res["ndcg_at_10"] == round(sum(NDCG[:5]) / 5, 6)
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
    for key in ("mcnemar", "mcnemar_p", "permutation", "permutation_p"):
        assert key in res and res[key] is None, key   # no baseline: no paired tests


def test_intervals_are_seeded_cluster_bootstraps_over_families():
    q, run = make_queries(), make_run()
    res = evaluate_split(run, q, "dev", n_boot=200, seed=3)
    assert res == evaluate_split(run, q, "dev", n_boot=200, seed=3)
    # the seed is the resampling seed: other seeds give other intervals (3 families: few distinct resamples)
    seen = {tuple(map(tuple, (evaluate_split(run, q, "dev", n_boot=200, seed=s)[f"{m}_ci"]
                               for m in ("top1", "mrr_at_10", "ndcg_at_10", "ece")))) for s in range(8)}
    assert len(seen) > 1
    dev = np.arange(5)
    j = judge(run, q)
    fam = FAMILY[dev]
    for name, key in (("top1", "correct"), ("stale_rate", "stale"), ("rumor_rate", "rumor"), ("mrr_at_10", "rr10"),
                      ("recall_at_5", "r5"), ("ndcg_at_10", "ndcg10")):
        lo, hi = cluster_bootstrap_mean_ci(j[key][dev].astype(np.float64), fam, n_boot=200, seed=3)
        assert res[f"{name}_ci"] == [round(lo, 6), round(hi, 6)], name
        assert 0.0 <= res[f"{name}_ci"][0] <= res[name] <= res[f"{name}_ci"][1] <= 1.0, name
    conf = np.where(np.isnan(CONF[dev]), 0.0, CONF[dev])
    lo, hi = cluster_bootstrap_ci(lambda c, k: ece(c, k, 10)[0], (conf, j["correct"][dev]), fam, n_boot=200, seed=3)
    assert res["ece_ci"] == [round(lo, 6), round(hi, 6)]
    # the family labels matter: resampling queries one by one gives another interval for the ranking metrics
    per_query = [cluster_bootstrap_mean_ci(j[k][dev].astype(np.float64), np.arange(5), n_boot=200, seed=3)
                 for k in ("rr10", "ndcg10")]
    assert [res["mrr_at_10_ci"], res["ndcg_at_10_ci"]] != [[round(a, 6), round(b, 6)] for a, b in per_query]
    # and with every query its own family the top-1 interval is the plain per-query bootstrap
    q.family = np.array(q.ids, dtype=object)
    single = evaluate_split(run, q, "dev", n_boot=200, seed=3)
    lo, hi = bootstrap_mean_ci(j["correct"][dev], n_boot=200, seed=3)
    assert single["top1_ci"] == [round(lo, 6), round(hi, 6)] and single["n_families"] == 5


def test_by_category():
    cat = evaluate_split(make_run(), make_queries(), "dev", n_boot=200)["by_category"]
    assert list(cat) == ["contested", "current", "recently_updated"]   # sorted by name
    point = ("n_queries", "top1", "stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5", "ndcg_at_10")
    # contested = {q2}: rumor, wrong, conf 0.35 -> ECE 0.35, rr 1/7; one family: a degenerate interval
    assert cat["contested"] == {"n_queries": 1, "top1": 0.0, "stale_rate": 0.0, "rumor_rate": 1.0, "ece": 0.35,
                                "mrr_at_10": 0.142857, "recall_at_5": 0.0, "ndcg_at_10": round(NDCG[2], 6),
                                "top1_ci": [0.0, 0.0]}
    # current = {q0 right @0.9, q3 no result @0.0}: ECE = 0.1 * 1/2 + 0 = 0.05, MRR (1 + 0)/2
    c = cat["current"]
    assert {k: c[k] for k in point} == {
        "n_queries": 2, "top1": 0.5, "stale_rate": 0.0, "rumor_rate": 0.0, "ece": 0.05,
        "mrr_at_10": 0.5, "recall_at_5": 0.5, "ndcg_at_10": round(NDCG[0] / 2, 6)}
    # q0 (family A) and q3 (family B): the category's interval resamples those two families
    lo, hi = cluster_bootstrap_mean_ci(np.array([1.0, 0.0]), ["A", "B"], n_boot=200, seed=0)
    assert c["top1_ci"] == [round(lo, 6), round(hi, 6)]
    # recently_updated = {q1 stale @0.8 wrong, q4 right @0.3}: ECE = (0.8 + 0.7) / 2 = 0.75, MRR (1/3 + 1)/2
    r = cat["recently_updated"]
    assert {k: r[k] for k in point} == {
        "n_queries": 2, "top1": 0.5, "stale_rate": 0.5, "rumor_rate": 0.0, "ece": 0.75,
        "mrr_at_10": 0.666667, "recall_at_5": 0.75, "ndcg_at_10": round((NDCG[1] + NDCG[4]) / 2, 6)}


def test_test_split_mcnemar_and_permutation():
    res = evaluate_split(make_run(), make_queries(), "test", baseline_correct=BASELINE, n_boot=200)
    assert res["n_queries"] == 3 and res["n_families"] == 2
    assert res["top1"] == 0.333333        # q5
    assert res["stale_rate"] == 0.0       # q7's top-1 is 9, not its stale 2
    assert res["rumor_rate"] == 0.333333  # q6
    assert res["mrr_at_10"] == 0.5        # (1 + 1/2 + 0) / 3
    assert res["recall_at_5"] == 0.666667
    assert res["ndcg_at_10"] == round(sum(NDCG[5:]) / 3, 6)
    assert res["ece"] == 0.233333         # (|1 - 1.0| + |0 - 0.6| + |0 - 0.1|) / 3 = 0.7 / 3
    # baseline on test [0, 1, 1] vs run [1, 0, 0]: b = 2 (q6, q7), c = 1 (q5);
    # p = 2 * P(X <= 1 | Bin(3, 1/2)) = 2 * 4/8 = 1.0
    assert res["mcnemar"] == {"p_value": 1.0, "b": 2, "c": 1, "n": 3}
    assert res["mcnemar_p"] == 1.0
    # cluster totals of run - baseline: D (q5, q6) 1 - 1 = 0, E (q7) 0 - 1 = -1; T = -1/3;
    # the 4 sign patterns give |T*| = 1/3 each: p = 1
    assert res["permutation"] == {"p_value": 1.0, "statistic": -0.333333, "n_clusters": 2, "n": 3, "exact": True}
    assert res["permutation_p"] == 1.0


def test_paired_tests_on_dev_use_the_split_rows_of_the_aligned_baseline():
    res = evaluate_split(make_run(), make_queries(), "dev", baseline_correct=BASELINE, n_boot=50)
    # b = 3, c = 1 (see BASELINE): p = 2 * P(X <= 1 | Bin(4, 1/2)) = 2 * 5/16 = 0.625
    assert res["mcnemar"] == {"p_value": 0.625, "b": 3, "c": 1, "n": 5}
    assert res["mcnemar_p"] == 0.625
    # cluster totals of run - baseline: A (q0, q1) 1 - 2 = -1, B (q2, q3) 0 - 2 = -2, C (q4) 1 - 0 = +1;
    # T = -2/5. Sums over the 8 sign patterns of (±1, ±2, ±1): 4, 2, 0, -2, 2, 0, -2, -4; |sum| >= 2 in 6 of 8
    assert res["permutation"] == {"p_value": 0.75, "statistic": -0.4, "n_clusters": 3, "n": 5, "exact": True}
    assert res["permutation_p"] == 0.75


def test_tiny_p_values_keep_their_significant_digits():
    # 14 families x 3 queries; the baseline gets every one wrong, the run every one right
    n_fam, per = 14, 3
    n = n_fam * per
    q = Queries(
        ids=[f"q{i}" for i in range(n)], texts=[""] * n, query_time=np.zeros(n), as_of=np.zeros(n),
        category=np.array(["current"] * n, dtype=object), split=np.array(["test"] * n, dtype=object),
        relevant=Ragged.from_lists([[i] for i in range(n)]), grades=Ragged.from_lists([[2]] * n),
        stale=Ragged.from_lists([[]] * n), rumor=Ragged.from_lists([[]] * n),
        family=np.array([f"f{i // per:02d}" for i in range(n)], dtype=object),
    )
    ranked = np.arange(n, dtype=np.int64)[:, None]
    run = Run("all_right", ranked, np.ones((n, 1)), np.ones(n))
    res = evaluate_split(run, q, "test", baseline_correct=np.zeros(n, dtype=bool), n_boot=20,
                         n_permutations=20000)
    # McNemar: b = 0, c = 42: p = 2 * 2^-42 = 4.5e-13 (6 decimals would print 0.0)
    assert res["mcnemar_p"] == float(f"{2 * 0.5 ** 42:.6g}") and 0.0 < res["mcnemar_p"] < 1e-12
    assert res["mcnemar"]["b"] == 0 and res["mcnemar"]["c"] == 42
    # permutation: 2^14 = 16384 <= 20000 patterns, exact; only the observed pattern and its mirror are as
    # extreme: p = 2 / 16384 = 0.0001220703125 -> 0.000122070 (6 decimals would give 0.000122)
    perm = res["permutation"]
    assert perm["exact"] is True and perm["n_clusters"] == 14 and perm["n"] == 42 and perm["statistic"] == 1.0
    assert res["permutation_p"] == perm["p_value"] == float(f"{2 / 2 ** 14:.6g}") == 0.000122070
    assert res["permutation_p"] != round(2 / 2 ** 14, 6)


def test_leakage_with_windows_is_a_cluster_bootstrap_of_the_pooled_ratio():
    q, run = make_queries(), make_run()
    n_chunks = 19
    valid_from = np.zeros(n_chunks)
    valid_to = np.full(n_chunks, np.inf)
    valid_to[[4, 8]] = -1.0   # chunks 4 and 8 ended before as_of = 0: they leak wherever they are returned
    res = evaluate_split(run, q, "dev", n_boot=100, seed=1, windows=(valid_from, valid_to))
    # dev returned: q0 3, q1 3, q2 7 (4 and 8 leak), q3 0, q4 2 -> 2 / 15
    assert res["leakage_at_10"] == round(2 / 15, 6)
    leak = np.array([0, 0, 2, 0, 0])
    ret = np.array([3, 3, 7, 0, 2])
    lo, hi = cluster_bootstrap_ci(leakage_rate, (leak, ret), FAMILY[:5], n_boot=100, seed=1)
    assert res["leakage_at_10_ci"] == [round(lo, 6), round(hi, 6)]
    assert res["by_category"]["contested"]["leakage_at_10"] == round(2 / 7, 6)
    assert res["by_category"]["current"]["leakage_at_10"] == 0.0


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
