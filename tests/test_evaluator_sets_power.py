"""The evaluator's set-valued relevance (judge_sets, rank_summary) on the hand-made example, and power_analysis
(design effect, minimum detectable top-1 difference) on clustered outcomes made by hand."""

import json
import math

import numpy as np
import pytest

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Queries
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.evaluator import judge, judge_sets, power_analysis, rank_summary
from smartvector_bench.core.evaluation.metrics import (bootstrap_mean_ci, cluster_bootstrap_mean_ci, design_effect,
                                            minimum_detectable_difference)
from smartvector_bench.core.evaluation.metrics.summary import first_relevant_rank

from .evaluator_cases import FAMILY, RANKED, make_queries, make_run


# ---- set-valued relevance (judge_sets, rank_summary) ---------------------------------------------------------

def test_judge_sets_a_hit_stands_for_several_rows_or_none():
    q = make_queries()
    hits = [
        [[7, 2], [], [9, 1]],   # vs q1 (relevant 1, stale 2): top hit holds stale 2; the 2nd maps to no row
        [[6, 5]],               # vs q0 (relevant 0, 5): one of the top hit's two rows is relevant
        [[4], [3]],             # vs q2 (relevant 3, rumor 4)
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
        assert js[key].tolist() == j[key].tolist() == ((run.top1 >= 0) & sets.contains(run.top1)).tolist(), key
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
