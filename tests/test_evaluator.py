"""evaluate_split on a hand-made, corpus-free example whose every number is worked out by hand (benchmark v2:
graded judgments with several relevant chunks per query, families as clusters)."""

import json
import math

import numpy as np
import pytest

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Queries
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluator import evaluate_split, judge, judge_sets, power_analysis, rank_summary
from smartvector_bench.core.metrics import (bootstrap_mean_ci, cluster_bootstrap_ci, cluster_bootstrap_mean_ci, design_effect,
                                       ece, in_sets, leakage_rate, minimum_detectable_difference)
from smartvector_bench.core.metrics.summary import first_relevant_rank
from smartvector_bench.core.run import Run

_ = -1  # padding
L3 = math.log2(3)

# q  split category          family relevant (grade)  stale    rumor  ranked (k = 8)             conf  outcome
# 0  dev   current           A      0 (2), 5 (1)      []       []     5 0 6                      0.90  correct (grade 1 top)
# 1  dev   recently_updated  A      1 (2)             [2]      []     2 7 1                      0.80  stale,   rr 1/3
# 2  dev   contested         B      3 (2)             []       [4]    4 8 9 10 11 12 3           0.35  rumour,  rr 1/7
# 3  dev   current           B      13 (2)            []       []     (nothing)                  NaN   wrong,   rr 0
# 4  dev   recently_updated  C      14 (2), 17 (1)    [15, 16] []     14 15                      0.30  correct, r5 1/2
# 5  test  current           D      0 (2)             []       []     0                          1.00  correct
# 6  test  contested         D      3 (2), 18 (1)     []       [4]    4 18 3                     0.60  rumour,  rr 1/2
# 7  test  current           E      1 (2)             [2]      []     9 8                        0.10  wrong,   rr 0
RANKED = np.array([
    [5, 0, 6, _, _, _, _, _],
    [2, 7, 1, _, _, _, _, _],
    [4, 8, 9, 10, 11, 12, 3, _],
    [_, _, _, _, _, _, _, _],
    [14, 15, _, _, _, _, _, _],
    [0, _, _, _, _, _, _, _],
    [4, 18, 3, _, _, _, _, _],
    [9, 8, _, _, _, _, _, _],
], dtype=np.int64)
CONF = np.array([0.9, 0.8, 0.35, np.nan, 0.3, 1.0, 0.6, 0.1])
FAMILY = np.array(["A", "A", "B", "B", "C", "D", "D", "E"], dtype=object)
RELEVANT = [[0, 5], [1], [3], [13], [14, 17], [0], [3, 18], [1]]
GRADES = [[2, 1], [2], [2], [2], [2, 1], [2], [2, 1], [2]]
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


def make_queries() -> Queries:
    n = 8
    return Queries(
        ids=[f"q{i}" for i in range(n)], texts=[f"query {i}" for i in range(n)],
        query_time=np.zeros(n), as_of=np.zeros(n),
        category=np.array(["current", "recently_updated", "contested", "current", "recently_updated",
                           "current", "contested", "current"], dtype=object),
        split=np.array(["dev"] * 5 + ["test"] * 3, dtype=object),
        relevant=Ragged.from_lists(RELEVANT), grades=Ragged.from_lists(GRADES),
        stale=Ragged.from_lists([[], [2], [], [], [15, 16], [], [], [2]]),
        rumor=Ragged.from_lists([[], [], [4], [], [], [], [4], []]),
        family=FAMILY.copy(),
    )


def make_run() -> Run:
    scores = np.where(RANKED >= 0, 1.0, np.nan)
    return Run(system="toy", ranked=RANKED, scores=scores, confidence=CONF)


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
    assert res["rumor_rate"] == 0.2       # q2 (top-1 = 4, rumour)
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
    # contested = {q2}: rumour, wrong, conf 0.35 -> ECE 0.35, rr 1/7; one family: a degenerate interval
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


# ---- set-valued relevance (judge_sets, rank_summary) ---------------------------------------------------------

def test_judge_sets_a_hit_stands_for_several_rows_or_none():
    q = make_queries()
    hits = [
        [[7, 2], [], [9, 1]],   # vs q1 (relevant 1, stale 2): top hit holds stale 2; the 2nd maps to no row
        [[6, 5]],               # vs q0 (relevant 0, 5): one of the top hit's two rows is relevant
        [[4], [3]],             # vs q2 (relevant 3, rumour 4)
        [[0], [13]],            # vs q3 (relevant 13) with k = 2: rank 2
        [],                     # vs q5: nothing returned
    ]
    j = judge_sets(hits, q, k=2, qidx=np.array([1, 0, 2, 3, 5]))
    assert j["correct"].tolist() == [False, True, False, False, False]
    assert j["stale"].tolist() == [True, False, False, False, False]
    assert j["rumor"].tolist() == [False, False, True, False, False]
    # q1's relevant row 1 is at rank 3, beyond k = 2: not found
    assert j["rank"].tolist() == [0, 1, 2, 2, 0]
    assert j["rr"].tolist() == [0.0, 1.0, 0.5, 0.5, 0.0]
    assert j["found"].tolist() == [False, True, True, True, False]
    assert j["n_hits"].tolist() == [2, 1, 2, 2, 0] and j["n_unmapped"].tolist() == [1, 0, 0, 0, 0]
    assert judge_sets(hits[:1], q, k=3, qidx=np.array([1]))["rank"].tolist() == [3]
    # a malformed set holding -1 matches nothing, not even a neighbouring query's row
    bad = make_queries()
    bad.stale = Ragged.from_lists([[], [-1]] + [[]] * 6)
    assert not judge_sets([[[19]], [[19]]], bad, k=1, qidx=np.array([0, 1]))["stale"].any()
    with pytest.raises(BenchError, match="2 hit lists for 1 queries"):
        judge_sets(hits[:2], q, k=2, qidx=np.array([1]))


def test_judge_is_judge_sets_on_singleton_sets():
    q, run = make_queries(), make_run()
    sets = [[[int(c)] for c in row if c >= 0] for row in RANKED]
    js, j = judge_sets(sets, q, k=10), judge(run, q)
    for key, sets in (("correct", q.relevant), ("stale", q.stale), ("rumor", q.rumor)):
        assert js[key].tolist() == j[key].tolist() == in_sets(run.top1, sets).tolist(), key
    assert js["rr"].tolist() == pytest.approx(j["rr10"].tolist())  # trec_eval's RR@10 over the graded qrels
    assert js["rank"].tolist() == [1, 3, 7, 0, 1, 1, 2, 0]


def test_judge_sets_rank_is_first_relevant_rank():
    rng = np.random.default_rng(7)
    q = make_queries()
    for _ in range(50):
        qidx = rng.integers(0, len(q), size=6)
        hits = [[rng.choice(20, size=rng.integers(0, 3), replace=False).tolist() for _ in range(rng.integers(0, 6))]
                for _ in qidx]
        j = judge_sets(hits, q, k=4, qidx=qidx)
        want = [first_relevant_rank(h[:4], set(q.relevant.row(int(i)).tolist())) or 0 for h, i in zip(hits, qidx)]
        assert j["rank"].tolist() == want


def test_rank_summary_plain_or_cluster_bootstrap():
    q = make_queries()
    j = judge_sets([[[int(c)] for c in row if c >= 0] for row in RANKED], q, k=10)
    res = rank_summary(j, 10, n_boot=200, seed=3)
    assert list(res) == ["n", "top1", "top1_ci", "correct", "mrr@10", "mrr@10_ci", "recall@10"]
    assert (res["n"], res["top1"], res["correct"], res["recall@10"]) == (8, 0.375, 3, 0.75)
    assert res["mrr@10"] == round((1 + 1 / 3 + 1 / 7 + 1 + 1 + 1 / 2) / 8, 6)
    lo, hi = bootstrap_mean_ci(j["rr"], n_boot=200, seed=3)   # clusters=None: the plain per-query bootstrap
    assert res["mrr@10_ci"] == [round(lo, 6), round(hi, 6)]
    dev = np.arange(5)
    fam = rank_summary(j, 10, n_boot=200, seed=3, select=dev, clusters=FAMILY[dev])
    lo, hi = cluster_bootstrap_mean_ci(j["correct"][dev], FAMILY[dev], n_boot=200, seed=3)
    assert fam["n"] == 5 and fam["top1_ci"] == [round(lo, 6), round(hi, 6)]
    assert rank_summary(j, 10, select=np.zeros(8, dtype=bool)) == {"n": 0}


# ---- power_analysis ---------------------------------------------------------------------------------------

POWER_KEYS = {"split", "reference_system", "alpha", "power", "n_queries", "n_families", "icc", "mean_family_size",
              "design_effect", "n_effective", "reference_top1", "mde_top1", "mde_top1_at_50"}


def power_queries() -> tuple[Queries, np.ndarray]:
    """40 test families of 5 queries (families 0-23: 4 of 5 right; 24-39: 1 of 5) and 10 dev queries (all
    right, in families of their own) that must not count."""
    fam = [f"t{g:02d}" for g in range(40) for _ in range(5)] + [f"d{i}" for i in range(10)]
    correct = [i < (4 if g < 24 else 1) for g in range(40) for i in range(5)] + [True] * 10
    n = len(fam)
    q = Queries(
        ids=[f"q{i}" for i in range(n)], texts=[""] * n, query_time=np.zeros(n), as_of=np.zeros(n),
        category=np.array(["current"] * n, dtype=object),
        split=np.array(["test"] * 200 + ["dev"] * 10, dtype=object),
        relevant=Ragged.from_lists([[i] for i in range(n)]), grades=Ragged.from_lists([[2]] * n),
        stale=Ragged.from_lists([[]] * n), rumor=Ragged.from_lists([[]] * n),
        family=np.array(fam, dtype=object),
    )
    return q, np.array(correct, dtype=bool)


def test_power_analysis_keys_and_a_finite_mde():
    q, correct = power_queries()
    pw = power_analysis(correct, q, "test", reference="valid_cosine")
    assert set(pw) == POWER_KEYS
    assert (pw["split"], pw["reference_system"], pw["alpha"], pw["power"]) == ("test", "valid_cosine", 0.05, 0.8)
    assert (pw["n_queries"], pw["n_families"]) == (200, 40)   # the dev rows are left out
    assert pw["mean_family_size"] == 5.0
    assert pw["reference_top1"] == 0.56                        # (24 * 4 + 16 * 1) / 200
    # strongly clustered outcomes: icc > 0, a design effect > 1, fewer effective queries than queries
    de = design_effect(correct[:200], q.family[:200])
    assert pw["icc"] == round(de["icc"], 6) and 0.1 < pw["icc"] < 1.0
    assert pw["design_effect"] == pytest.approx(1 + 4 * pw["icc"], abs=1e-5)   # equal sizes: m0 = 5
    assert pw["n_effective"] == pytest.approx(200 / pw["design_effect"], rel=1e-5)
    assert pw["mde_top1"] == round(minimum_detectable_difference(0.56, de["n_effective"]), 6)
    assert pw["mde_top1_at_50"] == round(minimum_detectable_difference(0.5, de["n_effective"]), 6)
    assert math.isfinite(pw["mde_top1"]) and 0.0 < pw["mde_top1"] < 1 - 0.56
    assert math.isfinite(pw["mde_top1_at_50"]) and 0.0 < pw["mde_top1_at_50"] < 0.5
    # clustering costs power: the MDE is larger than for 200 independent queries
    assert pw["mde_top1"] > minimum_detectable_difference(0.56, 200.0)
    assert json.loads(json.dumps(pw, allow_nan=False)) == pw


def test_power_analysis_follows_alpha_power_and_split():
    q, correct = power_queries()
    base = power_analysis(correct, q, "test")
    strict = power_analysis(correct, q, "test", alpha=0.01, power=0.9)
    assert (strict["alpha"], strict["power"]) == (0.01, 0.9)
    assert strict["mde_top1"] > base["mde_top1"]
    dev = power_analysis(correct, q, "dev")
    assert (dev["split"], dev["n_queries"], dev["n_families"], dev["reference_top1"]) == ("dev", 10, 10, 1.0)
    # ten queries in ten families: no correlation within a family to estimate, so it is not measured (not 0)
    assert dev["icc"] is None and dev["design_effect"] == 1.0
    assert dev["not_measured"] == {"icc": "no two queries share a family: the intra-family correlation is undefined"}
    assert "not_measured" not in base
    assert dev["mde_top1"] is None   # from a top-1 of 100% no increase is detectable (NaN -> None)
