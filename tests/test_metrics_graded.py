"""Graded-qrels IR metrics (ir_measures / pytrec_eval) against values computed by hand."""

import math
import random

import ir_measures
import pytest

from smartvector_bench.core.evaluation.metrics import ir_metrics

QRELS = {
    "q1": {"a": 2, "b": 1, "c": 0, "d": 1},
    "q2": {"x": 1},
    "q3": {"y": 0},          # judged, nothing relevant
    "q4": {"z": 2},
    "q5": {},                # no judgments at all
}
RANKED = {
    "q1": ["c", "b", "e", "a"],          # grades 0, 1, -, 2; d (grade 1) not retrieved
    "q3": ["y"],
    "q4": [],                            # empty ranking
    "q9": ["a"],                         # not in qrels: ignored
    # q2, q5 missing from the run
}


def test_hand_values():
    out = ir_metrics(RANKED, QRELS, measures=("RR@10", "RR@1", "R@5", "R@2", "nDCG@10", "nDCG@2", "P@1"))
    assert set(out) == {"RR@10", "RR@1", "R@5", "R@2", "nDCG@10", "nDCG@2", "P@1"}
    for per_query in out.values():
        assert set(per_query) == set(QRELS)
    assert out["RR@10"]["q1"] == pytest.approx(1 / 2)   # first grade >= 1 at rank 2
    assert out["RR@1"]["q1"] == 0.0                     # cutoff applies
    assert out["R@5"]["q1"] == pytest.approx(2 / 3)     # a, b of {a, b, d}
    assert out["R@2"]["q1"] == pytest.approx(1 / 3)
    # nDCG with grades as gains, discount log2(rank + 1)
    dcg10 = 0 / math.log2(2) + 1 / math.log2(3) + 2 / math.log2(5)
    idcg10 = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert out["nDCG@10"]["q1"] == pytest.approx(dcg10 / idcg10, abs=1e-12)
    assert out["nDCG@2"]["q1"] == pytest.approx((1 / math.log2(3)) / (2 + 1 / math.log2(3)), abs=1e-12)
    assert out["P@1"]["q1"] == 0.0
    for qid in ("q2", "q3", "q4", "q5"):  # missing run, nothing relevant, empty ranking, no qrels
        assert all(out[m][qid] == 0.0 for m in out), qid
    assert all(type(v) is float for per_query in out.values() for v in per_query.values())


def test_default_measures_and_missing_query_is_zero_not_dropped():
    out = ir_metrics({"q1": ["a"]}, {"q1": {"a": 1}, "q2": {"b": 2}})
    assert out == {"RR@10": {"q1": 1.0, "q2": 0.0}, "R@5": {"q1": 1.0, "q2": 0.0},
                   "nDCG@10": {"q1": 1.0, "q2": 0.0}}


def test_list_order_not_doc_id_decides_rank():
    # trec_eval would break equal scores by doc id; scores come from the list position instead
    qrels = {"q": {"z": 1}}
    assert ir_metrics({"q": ["a", "z"]}, qrels, ["RR@10"])["RR@10"]["q"] == 0.5
    assert ir_metrics({"q": ["z", "a"]}, qrels, ["RR@10"])["RR@10"]["q"] == 1.0


def test_duplicate_keeps_its_rank():
    out = ir_metrics({"q": ["x", "x", "r"]}, {"q": {"r": 1, "x": 0}}, ["RR@10", "RR@2", "nDCG@10"])
    assert out["RR@10"]["q"] == pytest.approx(1 / 3)
    assert out["RR@2"]["q"] == 0.0
    assert out["nDCG@10"]["q"] == pytest.approx(1 / math.log2(4))


def test_relevance_level_and_rr_beyond_cutoff():
    qrels = {"q": {"a": 1, "b": 2}}
    ranked = {"q": [f"n{i}" for i in range(10)] + ["a", "b"]}
    out = ir_metrics(ranked, qrels, ["RR@10", "RR", "RR(rel=2)@20", "RR(rel=2)"])
    assert out["RR@10"]["q"] == 0.0
    assert out["RR"]["q"] == pytest.approx(1 / 11)
    assert out["RR(rel=2)@20"]["q"] == pytest.approx(1 / 12)
    assert out["RR(rel=2)"]["q"] == pytest.approx(1 / 12)


def test_bad_input():
    with pytest.raises(ValueError, match="grades"):
        ir_metrics({}, {"q": {"a": -1}})
    with pytest.raises(ValueError, match="grades"):
        ir_metrics({}, {"q": {"a": 1.5}})
    with pytest.raises(ValueError, match="grades"):
        ir_metrics({}, {"q": {"a": "1"}})
    with pytest.raises(ValueError, match="unknown measure"):
        ir_metrics({}, {"q": {"a": 1}}, ["Bogus@3"])
    with pytest.raises(ValueError, match="not supported by pytrec_eval"):
        ir_metrics({}, {"q": {"a": 1}}, ["ERR@10"])
    with pytest.raises(ValueError, match="list of doc ids"):
        ir_metrics({"q": "abc"}, {"q": {"a": 1}})


# ---------------------------------------------------------------- random data against references


def _random_case(seed, n_queries=60, n_docs=12):
    rnd = random.Random(seed)
    docs = [f"d{i:02d}" for i in range(n_docs)]
    qrels, ranked = {}, {}
    for q in range(n_queries):
        qid = f"q{q:02d}"
        qrels[qid] = {d: rnd.choice([0, 0, 1, 2]) for d in rnd.sample(docs, rnd.randint(0, 6))}
        if rnd.random() < 0.9:
            ranked[qid] = rnd.sample(docs, rnd.randint(0, 12))
    return ranked, qrels


def _ndcg(docs, judged, k):
    dcg = sum(judged.get(d, 0) / math.log2(r + 2) for r, d in enumerate(docs[:k]))
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(r + 2) for r, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_against_references_on_random_data(seed):
    ranked, qrels = _random_case(seed)
    out = ir_metrics(ranked, qrels, ("RR@10", "R@5", "nDCG@10", "Success@1", "P@1"))
    s1 = {q: 1.0 if ranked.get(q) and judged.get(ranked[q][0], 0) >= 1 else 0.0 for q, judged in qrels.items()}
    assert set(s1) == set(qrels)
    assert s1 == out["Success@1"] == out["P@1"]
    assert 0 < sum(s1.values()) < len(s1)  # the case exercises both outcomes
    # RR@10 through ir_measures' own routing (MS MARCO provider) agrees with the truncated-run trec_eval RR
    run = {q: {d: float(len(ds) - r) for r, d in enumerate(ds)} for q, ds in ranked.items() if ds}
    default = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.RR @ 10], qrels, run)}
    for qid in qrels:
        docs = ranked.get(qid, [])
        assert out["RR@10"][qid] == pytest.approx(default.get(qid, 0.0), abs=1e-12)
        assert out["nDCG@10"][qid] == pytest.approx(_ndcg(docs, qrels[qid], 10), abs=1e-12)
        n_rel = sum(g >= 1 for g in qrels[qid].values())
        hits = sum(qrels[qid].get(d, 0) >= 1 for d in docs[:5])
        assert out["R@5"][qid] == pytest.approx(hits / n_rel if n_rel else 0.0, abs=1e-12)
