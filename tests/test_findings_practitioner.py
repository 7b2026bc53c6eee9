"""The sentences of docs/findings.md "What these rows say" (issue 31), checked on the committed results/: a
republication that changes one fails here until the prose is rewritten."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from smartvector_bench.core.evaluation.verdicts.pooled import pooled_paired
from smartvector_bench.tools.sweeps import regimes

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "results"
CEILINGS = {"oracle"}


def _test(folder: str) -> dict:
    return {s: v["test"] for s, v in json.loads((RESULTS / folder / "metrics.json").read_text())["systems"].items()}


def _best(folder: str) -> str:
    t = {s: v for s, v in _test(folder).items() if s not in CEILINGS}
    return max(sorted(t), key=lambda s: (t[s]["top1"], s == "valid_cosine"))


def _paired_p(folder: str, a: str, b: str) -> float:
    from smartvector_bench.core.evaluation.claims import run_queries

    return pooled_paired(run_queries(RESULTS, folder), a, b, "correct", min_seeds=1, n_resamples=2000).p_value


def test_the_ceiling_a_practitioner_reaches():
    assert _best("main_large") == "ltr" and _paired_p("main_large", "valid_cosine", "ltr") < 0.05
    q = pd.read_csv(RESULTS / "seeds" / "queries.csv")
    test = q[(q["split"] == "test") & ~q["system"].isin(CEILINGS)]
    mean = test.groupby("system")["correct"].mean()
    assert mean.idxmax() == "valid_authority"
    assert pooled_paired(q, "valid_cosine", "valid_authority", "correct", n_resamples=2000).p_value >= 0.05
    assert _best("handbook") == "bm25_valid"
    facts = {s: v["top1"] for s, v in _test("facts").items() if s not in CEILINGS}
    for s, top1 in facts.items():
        if top1 > facts["valid_cosine"]:
            assert _paired_p("facts", "valid_cosine", s) >= 0.05, s
    large, seeds = _test("main_large"), mean
    assert large["hybrid_valid"]["top1"] > large["valid_cosine"]["top1"]
    assert seeds["hybrid_valid"] <= seeds["valid_cosine"]


def test_smartvector_misses_the_fact_not_the_version():
    t = _test("main_large")
    sv, vc = t["smartvector"], t["valid_cosine"]
    assert sv["anatomy"]["other_family"]["count"] > sv["anatomy"]["n_misses"] / 2
    assert sv["anatomy"]["other_family"]["share"] > 3 * vc["anatomy"]["other_family"]["share"]
    lo, hi = vc["version_accuracy_ci"]
    assert lo <= sv["version_accuracy"] <= hi


def test_what_ltr_learns():
    m = json.loads((RESULTS / "main_large" / "metrics.json").read_text())
    gain = m["system_info"]["ltr"]["fit"]["feature_importance_gain"]
    top = sorted(gain, key=gain.get, reverse=True)[:4]
    assert {"cosine_gap", "in_window"} <= set(top) and ({"bm25", "bm25_ratio"} & set(top))
    lt = m["systems"]["ltr"]["test"]
    assert lt["leakage_at_10"] > 0
    a = lt["anatomy"]
    assert a["superseded_version"]["count"] == 0
    assert a["lagging_source"]["count"] > 0 and a["other_family"]["count"] > 0


def test_without_exact_windows_the_method_does_not_take_over():
    table = regimes.regime_table(regimes.outcomes_from_queries_csv(RESULTS / "regimes" / "queries.csv"),
                                 n_permutations=2000)
    cell = {(r.system, r.regime): r for r in table.itertuples()}
    for system in ("valid_cosine", "bm25_valid", "metadata_filter", "valid_authority", "hybrid_valid"):
        for regime in ("no_valid_to", "created_only"):
            assert cell[(system, regime)].drop < 0 and cell[(system, regime)].p_value < 0.05, (system, regime)
    for regime in ("no_valid_to", "created_only"):
        sv = cell[("smartvector", regime)]
        assert sv.p_value >= 0.05  # its top-1 does not move (significantly)
        assert sv.top1 < cell[("recent_cosine", regime)].top1 < cell[("ltr", regime)].top1
    ltr = cell[("ltr", "no_valid_to")]
    assert ltr.p_value >= 0.05
    drops = {s: cell[(s, "no_valid_to")].drop for s in ("valid_cosine", "valid_authority", "hybrid_valid", "ltr",
                                                         "metadata_filter", "bm25_valid", "smartvector_tuned")}
    assert min(drops, key=lambda s: -drops[s]) == "ltr"  # the smallest loss


def test_on_real_facts_only_the_fitted_smartvector_holds_without_windows():
    from smartvector_bench.core.evaluation.metrics import paired_cluster_permutation_test

    df = regimes.outcomes_from_queries_csv(RESULTS / "regimes_facts" / "queries.csv")
    table = regimes.regime_table(df, n_permutations=2000)
    cell = {(r.system, r.regime): r for r in table.itertuples()}
    for system in ("valid_cosine", "valid_authority", "bm25_valid", "hybrid_valid", "metadata_filter"):
        for regime in ("no_valid_to", "created_only"):
            assert cell[(system, regime)].drop < 0 and cell[(system, regime)].p_value < 0.05, (system, regime)
    assert max(cell[("smartvector", r)].top1 for r in ("full", "no_valid_to", "created_only", "noisy")) < 0.05
    for regime in ("no_valid_to", "created_only", "noisy"):
        assert cell[("smartvector_tuned", regime)].p_value >= 0.05  # keeps its top-1
    d = df[(df["split"] == "test") & (df["regime"] == "created_only")]
    side = {s: d[d["system"] == s].set_index("query_id") for s in ("valid_cosine", "smartvector_tuned", "ltr")}
    j = side["valid_cosine"][["correct", "cluster"]].join(side["smartvector_tuned"][["correct"]]
                                                          .rename(columns={"correct": "b"}))
    assert j["b"].mean() > j["correct"].mean()
    assert paired_cluster_permutation_test(j["correct"].to_numpy(bool), j["b"].to_numpy(bool), list(j["cluster"]),
                                           n_resamples=2000, seed=0)["p_value"] < 0.05
    k = side["smartvector_tuned"][["correct", "cluster"]].join(side["ltr"][["correct"]].rename(columns={"correct": "b"}))
    assert paired_cluster_permutation_test(k["correct"].to_numpy(bool), k["b"].to_numpy(bool), list(k["cluster"]),
                                           n_resamples=2000, seed=0)["p_value"] >= 0.05  # level with ltr
