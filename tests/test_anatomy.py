"""Error anatomy (core/evaluation/metrics/anatomy.py): a hand-made corpus where one wrong top-1 of each class is placed
and lands in it; what is not measured without labels; version accuracy given the family on a hand-computed case; and
evaluate_runs' anatomy per split, validated by MainMetrics and rendered in table.md."""

from __future__ import annotations

import numpy as np
import pytest

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Labels, Queries
from smartvector_bench.core.evaluation.judgments import Timeline, judge_at
from smartvector_bench.core.evaluation.metrics import anatomy as A
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.evaluation.metrics.bootstrap import percentile_bounds, resample_indices
from smartvector_bench.core.run import Run

from .factories import make_corpus

INF, NAN = np.inf, np.nan
AS_OF = 25.0
# Family F: 30 from day 0, 40 from 10, 50 from 20 (the truth at AS_OF = 25 is 50). G: 7 from 0.
#  row family doc_type kind       value created valid       at day 25
#  0   F      policy   statement  50    18      [20, inf)   relevant
#  1   F      policy   statement  40    8       [10, 20)    stale, not in force  -> superseded_version
#  2   F      runbook  statement  40    9       [10, inf)   stale, in force      -> lagging_source
#  3   F      message  note       99    12      [12, inf)   rumor               -> rumor
#  4   F      policy   scope      -     0       [0, inf)    states no value      -> non_answer
#  5   G      policy   statement  7     0       [0, inf)    another family       -> other_family
#  6   ""     policy   note       -     0       [0, inf)    no family            -> other_family
#  7   F      policy   statement  60    22      [30, inf)   announced, not yet   -> not_in_force
#  8   F      policy   statement  77    0       [0, inf)    a value never in force, in force, neither stale
#                                                           nor rumor           -> other
ROWS = [
    {"text": "f 50", "doc": "F", "version": 3, "authority": 0.9, "created": 18.0, "valid_from": 20.0},
    {"text": "f 40", "doc": "F", "version": 2, "authority": 0.9, "created": 8.0, "valid_from": 10.0,
     "valid_to": 20.0},
    {"text": "runbook f 40", "doc": "RB", "authority": 0.8, "created": 9.0, "valid_from": 10.0},
    {"text": "heard f is 99", "doc": "M1", "authority": 0.2, "created": 12.0},
    {"text": "f scope", "doc": "FS", "authority": 0.9, "created": 0.0},
    {"text": "g 7", "doc": "G", "authority": 0.9, "created": 0.0},
    {"text": "lunch menu", "doc": "X", "authority": 0.5, "created": 0.0},
    {"text": "f goes to 60", "doc": "F2", "authority": 0.9, "created": 22.0, "valid_from": 30.0},
    {"text": "f 77", "doc": "F3", "authority": 0.9, "created": 0.0},
]
CHUNK_FAMILY = np.array(["F", "F", "F", "F", "F", "G", "", "F", "F"], dtype=object)
DOC_TYPE = np.array(["policy", "policy", "runbook", "message", "policy", "policy", "policy", "policy", "policy"],
                    dtype=object)
KIND = np.array(["statement", "statement", "statement", "note", "scope", "statement", "note", "statement",
                 "statement"], dtype=object)
VALUE = np.array([50, 40, 40, 99, NAN, 7, NAN, 60, 77], dtype=np.float64)
TIMELINES = {"F": Timeline(np.array([0.0, 10.0, 20.0]), np.array([30.0, 40.0, 50.0])),
             "G": Timeline(np.array([0.0]), np.array([7.0]))}
# One query per outcome, all about F at day 25: the top-1 each system returns and the class it must land in.
TOP1 = [0, -1, 5, 6, 3, 4, 2, 1, 7, 8]
WANT = ["correct", "no_result", "other_family", "other_family", "rumor", "non_answer", "lagging_source",
        "superseded_version", "not_in_force", "other"]


def corpus():
    return make_corpus(ROWS)


def queries(n: int = len(TOP1), split=None, family=None) -> Queries:
    """``n`` queries about F at AS_OF, judged by labels.judge_at over the corpus (the generator's rules)."""
    c = corpus()
    rows = np.nonzero(CHUNK_FAMILY == "F")[0]
    j = judge_at(rows, DOC_TYPE[rows], VALUE[rows], c.created_at[rows], c.valid_from[rows], c.valid_to[rows],
                 TIMELINES["F"], AS_OF, "policy")
    assert j.relevant.tolist() == [0] and j.stale.tolist() == [1, 2] and j.rumor.tolist() == [3]  # the table above
    family = np.array(family if family is not None else ["F"] * n, dtype=object)
    return Queries(
        ids=[f"q{i}" for i in range(n)], texts=["f?"] * n, query_time=np.full(n, 30.0), as_of=np.full(n, AS_OF),
        category=np.array(["current"] * n, dtype=object),
        split=np.array(split if split is not None else ["test"] * n, dtype=object),
        relevant=Ragged.from_lists([j.relevant.tolist()] * n), grades=Ragged.from_lists([j.grades.tolist()] * n),
        stale=Ragged.from_lists([j.stale.tolist()] * n), rumor=Ragged.from_lists([j.rumor.tolist()] * n),
        family=family)


def labels(q: Queries) -> Labels:
    return Labels(chunk_family=CHUNK_FAMILY, chunk_doc_type=DOC_TYPE, chunk_kind=KIND, chunk_value=VALUE,
                  query_family=np.asarray(q.family, dtype=object), query_asks=np.full(len(q), "policy", dtype=object),
                  timelines=TIMELINES)


def classes_of(top1, q: Queries, lab: Labels | None, missing: dict | None = None) -> list[str]:
    c = corpus()
    correct = np.isin(np.asarray(top1), [0])  # row 0 is the only relevant chunk
    return A.run_classes(np.asarray(top1), correct, q, c, lab,
                         A.gaps(lab) if missing is None else missing).tolist()


def test_one_miss_of_each_class_lands_in_it():
    q = queries()
    assert classes_of(TOP1, q, labels(q)) == WANT
    assert set(WANT) - {"correct"} == set(A.CLASSES)  # every class is exercised


def test_miss_classes_uses_the_times_it_is_given_and_the_precedence():
    c, q = corpus(), queries(3)
    # the same stale chunk (row 1): still in force if its window had stayed open -> lagging_source
    valid_to = c.valid_to.copy()
    valid_to[1] = INF
    got = A.miss_classes([1, 1, 3], [False, False, False], q.family, q.as_of, q.stale, q.rumor, CHUNK_FAMILY, VALUE,
                         c.created_at, c.valid_from, valid_to)
    assert got.tolist() == ["lagging_source", "lagging_source", "rumor"]
    # a rumor chunk of another family is other_family first (precedence), whatever the rumor set says
    fam = CHUNK_FAMILY.copy()
    fam[3] = "G"
    got = A.miss_classes([3], [False], q.family[:1], q.as_of[:1], q.stale.take([0]), q.rumor.take([0]), fam, VALUE,
                         c.created_at, c.valid_from, c.valid_to)
    assert got.tolist() == ["other_family"]


def test_the_summary_counts_each_class_and_partitions_the_misses():
    q = queries()
    cls = np.array(classes_of(TOP1, q, labels(q)), dtype=object)
    s = A.anatomy_summary(cls, np.zeros(len(cls), dtype=np.int64), n_boot=50, seed=0)
    assert s["n_misses"] == 9 and s["n_unclassified"] == 0
    assert s["other_family"] == {"count": 2, "share": 0.2, "share_ci": [0.2, 0.2]}  # one cluster: no spread
    for name in ("no_result", "rumor", "non_answer", "lagging_source", "superseded_version", "not_in_force", "other"):
        assert s[name] == {"count": 1, "share": 0.1, "share_ci": [0.1, 0.1]}, name
    # same family: the correct one, rumor, non_answer, lagging, superseded, not_in_force, other -> 1 / 7
    assert s[A.VERSION_ACCURACY] == round(1 / 7, 6) and s[M.ci(A.VERSION_ACCURACY)] == [round(1 / 7, 6)] * 2
    assert A.NOT_MEASURED not in s


def _ratio(c, s):
    return c.sum() / s.sum()


def test_version_accuracy_given_family_by_hand():
    # 3 correct, 2 same-family misses (lagging_source, rumor), 2 other_family, 1 no_result: 3 / (3 + 2) = 0.6
    cls = np.array(["correct", "correct", "lagging_source", "other_family", "correct", "no_result", "rumor",
                    "other_family"], dtype=object)
    clusters = np.array(["a", "a", "a", "b", "b", "c", "c", "c"], dtype=object)
    s = A.anatomy_summary(cls, clusters, n_boot=200, seed=3)
    assert s[A.VERSION_ACCURACY] == 0.6
    assert s["other_family"]["count"] == 2 and s["other_family"]["share"] == 0.25
    assert s["n_misses"] == 5
    # the interval: the pooled ratio over resampled families (a, b, c sorted), the evaluator's resamples
    correct = np.array([2, 1, 0])  # correct per family a, b, c
    same = np.array([3, 1, 1])  # a: 2 correct + lagging; b: 1 correct; c: rumor
    draws = resample_indices(3, 200, 3)
    want = percentile_bounds(correct[draws].sum(axis=1) / same[draws].sum(axis=1), 0.95)
    assert s[M.ci(A.VERSION_ACCURACY)] == [round(want[0], 6), round(want[1], 6)]
    # the share of other_family over the same resamples (paired with every other figure of the seed)
    other = np.array([0, 1, 1])
    size = np.array([3, 2, 3])
    want = percentile_bounds(other[draws].sum(axis=1) / size[draws].sum(axis=1), 0.95)
    assert s["other_family"]["share_ci"] == [round(want[0], 6), round(want[1], 6)]


def test_without_labels_the_family_classes_are_none_with_a_reason():
    q = queries()
    unmeasured = {M.STALE_RATE: "no labels/ folder: the stale sets are unknown",
                  M.RUMOR_RATE: "no labels/ folder: the rumor sets are unknown"}
    missing = A.gaps(None, unmeasured)
    assert set(missing) == set(A.INPUTS)
    got = classes_of(TOP1, q, None, missing)
    # measurable from the corpus times alone: no result, and not in force (rows 1 and 7 at day 25)
    assert got == ["correct", "no_result"] + ["unclassified"] * 5 + ["not_in_force", "not_in_force", "unclassified"]
    why = A.not_measured(missing)
    s = A.anatomy_summary(np.array(got, dtype=object), np.arange(len(got)), n_boot=50, seed=0, unmeasured=why)
    gone = {"other_family", "rumor", "non_answer", "lagging_source", "superseded_version", "other"}
    assert {c for c in A.CLASSES if s[c] is None} == gone
    assert s["no_result"]["count"] == 1 and s["not_in_force"]["count"] == 2 and s["n_unclassified"] == 6
    assert s[A.VERSION_ACCURACY] is None and s[M.ci(A.VERSION_ACCURACY)] == [None, None]
    assert set(s[A.NOT_MEASURED]) == gone | {A.VERSION_ACCURACY}
    assert s[A.NOT_MEASURED]["rumor"] == unmeasured[M.RUMOR_RATE]  # measured.unmeasured's words
    assert s[A.NOT_MEASURED]["lagging_source"] == unmeasured[M.STALE_RATE]
    assert s[A.NOT_MEASURED]["other_family"].startswith("no labels/ folder")


def test_labels_without_values_or_query_labels_follow_measured():
    q = queries()
    lab = labels(q)
    no_values = Labels(**{**lab.__dict__, "chunk_value": np.full(len(VALUE), NAN)})
    assert set(A.gaps(no_values)) == {"value"}
    assert set(A.not_measured(A.gaps(no_values))) == {"non_answer", "other"}
    gap = {M.STALE_RATE: "labels/ has no queries.jsonl: the stale sets are unknown",
           M.RUMOR_RATE: "labels/ has no queries.jsonl: the rumor sets are unknown"}
    missing = A.gaps(lab, gap)
    assert missing == {"family": "labels/ has no queries.jsonl: the query families are unknown",
                       "rumor": gap[M.RUMOR_RATE], "stale": gap[M.STALE_RATE]}


def _settings():
    from experiments.main import MainSettings
    return MainSettings(n_boot=50, n_permutations=50, progress=False, baseline="a", power_reference="a")


def _run(name: str, top1: list[int]) -> Run:
    ranked = np.full((len(top1), 10), -1, dtype=np.int64)
    ranked[:, 0] = top1
    scores = np.where(ranked >= 0, 1.0, np.nan)
    return Run(system=name, ranked=ranked, scores=scores, confidence=np.where(np.asarray(top1) >= 0, 0.5, np.nan))


def _evaluated(with_labels: bool):
    from experiments.main import evaluate_runs
    n = 2 * len(TOP1)
    split = ["dev"] * len(TOP1) + ["test"] * len(TOP1)
    q = queries(n, split=split, family=[f"F{i % 3}" for i in range(n)] if not with_labels else None)
    c = corpus()
    lab = labels(q) if with_labels else None
    unmeasured = {} if with_labels else {M.STALE_RATE: "no labels/ folder: the stale sets are unknown",
                                         M.RUMOR_RATE: "no labels/ folder: the rumor sets are unknown"}
    runs = {"a": _run("a", TOP1 + TOP1), "b": _run("b", [0] * n)}
    return evaluate_runs(runs, q, c, _settings(), unmeasured=unmeasured, labels=lab)


def test_evaluate_runs_holds_the_anatomy_of_each_split():
    _, results, _, _ = _evaluated(True)
    for split in ("dev", "test"):
        a = results["a"][split]
        assert a[M.ANATOMY]["n_misses"] == 9 and a[M.ANATOMY]["n_unclassified"] == 0
        assert {c: a[M.ANATOMY][c]["count"] for c in A.CLASSES} == {
            "no_result": 1, "other_family": 2, "rumor": 1, "non_answer": 1, "lagging_source": 1,
            "superseded_version": 1, "not_in_force": 1, "other": 1}
        assert a[M.VERSION_ACCURACY] == a[M.ANATOMY][A.VERSION_ACCURACY] == round(1 / 7, 6)
        assert a[M.ci(M.VERSION_ACCURACY)] == a[M.ANATOMY][M.ci(A.VERSION_ACCURACY)]
        b = results["b"][split]
        assert b[M.VERSION_ACCURACY] == 1.0 and b[M.ANATOMY]["n_misses"] == 0
        assert all(b[M.ANATOMY][c]["count"] == 0 for c in A.CLASSES)


def test_evaluate_runs_without_labels_stores_the_reasons():
    _, results, _, _ = _evaluated(False)
    for split in ("dev", "test"):
        a = results["a"][split]
        assert a[M.VERSION_ACCURACY] is None and a[M.ci(M.VERSION_ACCURACY)] == [None, None]
        assert a[M.ANATOMY]["no_result"]["count"] == 1 and a[M.ANATOMY]["not_in_force"]["count"] == 2
        assert a[M.ANATOMY]["rumor"] is None and "rumor" in a[M.ANATOMY][A.NOT_MEASURED]
        assert M.VERSION_ACCURACY not in (a.get("not_measured") or {})  # the split's own reasons are unchanged


def _metrics(results: dict) -> dict:
    from smartvector_bench.core import SCHEMA_VERSION
    return {"schema_version": SCHEMA_VERSION, "embedder": "hashing", "systems": results, "power": {},
            "calibration": {}, "system_info": {}, "timings_s": {},
            "dataset": {"name": "tiny", "sha256": "0" * 64, "n_queries": 20, "n_vectors": 9, "seed": 0},
            "experiment": {"name": "main", "baseline": "a"},
            "provenance": {"git": {"sha": None, "dirty": False}, "config_sha256": "0" * 64,
                           "packages": dict.fromkeys(("smartvector-bench", "faiss-cpu", "torch",
                                                      "sentence-transformers", "numpy"), "0")}}


@pytest.mark.parametrize("with_labels", [True, False])
def test_main_metrics_accepts_the_anatomy_and_refuses_a_broken_one(with_labels):
    import json

    from smartvector_bench.core.results import MainMetrics, ResultError
    _, results, _, _ = _evaluated(with_labels)
    doc = json.loads(json.dumps(_metrics(results)))
    MainMetrics.from_dict(doc, "metrics.json")
    bad = json.loads(json.dumps(doc))
    bad["systems"]["a"]["test"][M.ANATOMY]["no_result"]["count"] += 1  # no longer partitions the misses
    with pytest.raises(ResultError, match="n_misses"):
        MainMetrics.from_dict(bad, "metrics.json")
    old = json.loads(json.dumps(doc))  # written before the anatomy: still loads
    for per in old["systems"].values():
        for m in per.values():
            for key in (M.ANATOMY, M.VERSION_ACCURACY, M.ci(M.VERSION_ACCURACY)):
                del m[key]
    MainMetrics.from_dict(old, "metrics.json")


def test_table_md_shows_the_anatomy_and_ver_fam():
    from smartvector_bench.core.report import main_table
    from smartvector_bench.core.report import anatomy_table

    _, results, _, _ = _evaluated(True)
    m = _metrics(results)
    table = main_table(m, "test")
    assert "| ver\\|fam |" in table.splitlines()[0]
    assert f"| {100 / 7:.1f}% [" in next(x for x in table.splitlines() if x.startswith("| a |"))
    anat = anatomy_table(m, "test").splitlines()
    assert anat[0].startswith("| system | no result | other family | rumor |")
    assert anat[2] == "| a | 10.0% (1) | 20.0% (2) | 10.0% (1) | 10.0% (1) | 10.0% (1) | 10.0% (1) | 10.0% (1) | " \
                      "10.0% (1) | 9 |"
    _, results, _, _ = _evaluated(False)
    m = _metrics(results)
    assert "ver\\|fam" not in main_table(m, "test")  # measured by no system: the column is left out
    row = next(x for x in anatomy_table(m, "test").splitlines() if x.startswith("| a |"))
    assert row.count("not measured") == 6 and "| 10.0% (1) |" in row and "| 20.0% (2) |" in row
    assert row.endswith("| 9 (6) |")  # misses (unclassified: what the unmeasured classes would have taken)
