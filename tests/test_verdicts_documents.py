"""The verdict rules that restate a result document (re-embedding cost, the feedback loop, LiveVectorLake's
lvl_eval.json): every branch (holds / partly / does not hold / not measured), with the exact verdict asserted."""

from __future__ import annotations

import pytest

from smartvector_bench.core.evaluation import verdicts as V


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
