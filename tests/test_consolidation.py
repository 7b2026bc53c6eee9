"""Consolidation: contradiction detection and resolution, dependency edges, supersession transfer, ripple."""

import itertools

import numpy as np
import pytest

from smartvector_bench.systems.smartvector.consolidation import (ConsolidationParams, consolidate, content_similarity, jaccard_pairs,
                                             latest_successor, resolve, reverse, word_sets_matrix)
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError

from .factories import make_corpus


def rows_of(r: Ragged) -> list[list[int]]:
    return [r.row(i).tolist() for i in range(r.n_rows)]


# ---- resolve ---------------------------------------------------------------------------------------------

def test_resolve_unanimous_and_majority():
    ratio = np.array([0.2, 0.8])
    # b newer, higher authority, higher ratio -> 3 votes
    assert resolve(0, 1, np.array([10.0, 20.0]), np.array([0.3, 0.9]), ratio, "authority") == (1, 0, 3)
    # a newer + higher ratio (2) vs b higher authority (1)
    assert resolve(0, 1, np.array([20.0, 10.0]), np.array([0.3, 0.9]), ratio[::-1].copy(), "authority") == (0, 1, 2)


def test_resolve_tied_criterion_abstains_and_one_one_tie_break():
    created, authority, ratio = np.array([10.0, 20.0]), np.array([0.9, 0.3]), np.array([0.5, 0.5])
    # b newer (1), a higher authority (1), ratio tied abstains -> 1-1
    assert resolve(0, 1, created, authority, ratio, "authority") == (0, 1, 1)
    assert resolve(0, 1, created, authority, ratio, "recency") == (1, 0, 1)


def test_resolve_tie_break_falls_back_to_secondary():
    # equal authority; a higher ratio (1) vs b newer (1): authority tie-break is tied -> recency decides -> b
    created, authority, ratio = np.array([10.0, 20.0]), np.array([0.5, 0.5]), np.array([0.8, 0.2])
    assert resolve(0, 1, created, authority, ratio, "authority") == (1, 0, 1)
    # recency tie-break with equal created_at falls back to authority
    assert resolve(0, 1, np.array([5.0, 5.0]), np.array([0.9, 0.3]), np.array([0.2, 0.8]), "recency") == (0, 1, 1)


@pytest.mark.parametrize("tie_break", ["authority", "recency"])
def test_resolve_full_tie_goes_to_lower_index_whatever_the_argument_order(tie_break):
    same = np.array([1.0, 1.0, 1.0, 1.0])
    assert resolve(1, 3, same, same, same, tie_break) == (1, 3, 0)
    # documented: "A tied vote goes to tie_break, then to the lower index" -> 1, whichever is passed first
    assert resolve(3, 1, same, same, same, tie_break) == (1, 3, 0)


# ---- jaccard / similarity --------------------------------------------------------------------------------

TEXTS = [
    "remote work allowed two days weekly",
    "Remote WORK allowed three days weekly",
    "weekly days two never allowed remote work",
    "parking permits cost forty euros",
    "parking permits are free now",
    "remote remote remote",
    "",
    "a b c d e",
    "a b c x y z w v",  # with the previous one: 3 shared / 10 distinct = exactly 0.3
]


def brute_jaccard(texts, threshold, mask=None):
    sets = [set(t.lower().split()) for t in texts]
    out = {}
    for i, j in itertools.combinations(range(len(texts)), 2):
        if mask is not None and not (mask[i] and mask[j]):
            continue
        union = sets[i] | sets[j]
        if not union:
            continue
        jac = len(sets[i] & sets[j]) / len(union)
        if jac > threshold:
            out[(i, j)] = jac
    return out


@pytest.mark.parametrize("threshold", [0.0, 0.2, 0.3, 0.35, 0.5, 0.29])
def test_jaccard_pairs_match_brute_force(threshold):
    i, j, jac = jaccard_pairs(word_sets_matrix(TEXTS), threshold)
    got = {(int(a), int(b)): float(x) for a, b, x in zip(i, j, jac)}
    want = brute_jaccard(TEXTS, threshold)
    assert set(got) == set(want)
    for key in want:
        assert got[key] == pytest.approx(want[key], abs=1e-6)
    assert all(a < b for a, b in got)


def test_jaccard_exact_threshold_is_not_a_hit():
    i, j, _ = jaccard_pairs(word_sets_matrix(TEXTS), 0.3)
    assert (7, 8) not in set(zip(i.tolist(), j.tolist()))  # 3/10 = 0.3 is not > 0.3
    i, j, jac = jaccard_pairs(word_sets_matrix(TEXTS), 0.29)
    pairs = dict(zip(zip(i.tolist(), j.tolist()), jac.tolist()))
    assert pairs[(7, 8)] == pytest.approx(0.3, abs=1e-6)


def test_jaccard_pairs_mask_and_known_values():
    mask = np.array([True, True, False, True, True, True, True, True, True])
    i, j, jac = jaccard_pairs(word_sets_matrix(TEXTS), 0.0, mask)
    got = {(int(a), int(b)): float(x) for a, b, x in zip(i, j, jac)}
    assert got == pytest.approx(brute_jaccard(TEXTS, 0.0, mask), abs=1e-6)
    assert all(2 not in k for k in got)
    # "remote work allowed two days weekly" vs "Remote WORK allowed three days weekly": 5 shared / 7 distinct
    assert got[(0, 1)] == pytest.approx(5 / 7, abs=1e-6)
    # "parking permits cost forty euros" vs "parking permits are free now": 2 / 8
    assert got[(3, 4)] == pytest.approx(0.25, abs=1e-6)


def test_word_sets_matrix_binary_lowercase():
    m = word_sets_matrix(["A a b", "B c"]).toarray()
    assert m.shape == (2, 3)  # vocabulary {a, b, c}
    assert m.sum(axis=1).tolist() == [2.0, 2.0]  # duplicates counted once
    assert m.max() == 1.0


def test_content_similarity_is_lowercase_difflib_ratio():
    assert content_similarity("ABC def", "abc DEF") == 1.0
    # longest common block "remote work" (11 chars) only: 2 * 11 / (35 + 41) = 0.2894736842
    assert content_similarity(TEXTS[0], TEXTS[2]) == pytest.approx(22 / 76, abs=1e-12)


# ---- consolidate: contradictions --------------------------------------------------------------------------

POLICY = "remote work allowed two days weekly"
RUMOR = "weekly days two never allowed remote work"
UNRELATED = "cafeteria opens at eight"


def contradiction_corpus(extra: list[dict] | None = None) -> Corpus:
    return make_corpus([
        {"text": POLICY, "doc": "policy", "authority": 0.9, "created": 0.0, "source": "policy"},
        {"text": RUMOR, "doc": "slack1", "authority": 0.3, "created": 50.0, "source": "slack"},
        {"text": UNRELATED, "doc": "wiki", "authority": 0.75, "created": 10.0, "depends": [1]},
        *(extra or []),
    ])


def test_contradiction_texts_satisfy_detector():
    sets = [set(POLICY.split()), set(RUMOR.split())]
    jac = len(sets[0] & sets[1]) / len(sets[0] | sets[1])
    assert jac == pytest.approx(6 / 7) and jac > 0.3  # 6 shared words / 7 distinct
    assert content_similarity(POLICY, RUMOR) == pytest.approx(22 / 76) and 22 / 76 < 0.4


def test_contradiction_demote():
    res = consolidate(contradiction_corpus(), 60.0, ConsolidationParams())
    # slack newer (1 vote), policy higher authority (1 vote), ratio tied -> 1-1 -> tie_break authority -> policy
    assert res.contradictions == [(0, 1, 1)]
    assert res.negative_feedback.tolist() == [0.0, 1.0, 0.0]
    ev = [e for e in res.events if e["kind"] == "contradiction"]
    assert len(ev) == 1
    assert ev[0]["vector"] == 1 and ev[0]["cause"] == 0
    assert {k: ev[0][k] for k in ("jaccard", "char_similarity", "votes_for_winner", "applied", "detector")} == \
        {"jaccard": 0.8571, "char_similarity": 0.2895, "votes_for_winner": 1, "applied": True, "detector": "reference"}
    # Jaccard 6/7 > 0.35 too: the slack chunk (0.3) depends on the policy chunk (0.9), plus given wiki -> slack
    assert rows_of(res.depends_on) == [[], [0], [1]]
    assert res.edge_count.tolist() == [1, 2, 1]
    # the contradicted loser ripples to its dependant (wiki, hop 1): 0.75 - 0.15 = 0.6
    np.testing.assert_allclose(res.base_confidence, [0.9, 0.3, 0.6], rtol=0, atol=1e-12)
    assert res.summary() == {"contradictions": 1, "edges": 2,
                             "events": {"contradiction": 1, "dependency_detected": 1, "ripple": 1}}


def test_contradiction_log_only_applies_nothing():
    res = consolidate(contradiction_corpus(), 60.0, ConsolidationParams(verdict="log_only"))
    assert res.contradictions == [(0, 1, 1)]
    assert res.negative_feedback.tolist() == [0.0, 0.0, 0.0]
    assert [e["applied"] for e in res.events if e["kind"] == "contradiction"] == [False]
    np.testing.assert_allclose(res.base_confidence, [0.9, 0.3, 0.75], rtol=0, atol=1e-12)  # no ripple


def test_contradiction_recency_tie_break_demotes_policy():
    res = consolidate(contradiction_corpus(), 60.0, ConsolidationParams(tie_break="recency"))
    assert res.contradictions == [(1, 0, 1)]
    assert res.negative_feedback.tolist() == [1.0, 0.0, 0.0]


def test_contradiction_needs_both_ingested():
    res = consolidate(contradiction_corpus(), 40.0, ConsolidationParams())  # slack created at 50 > 40
    assert res.contradictions == []
    assert res.negative_feedback.tolist() == [0.0, 0.0, 0.0]


def test_same_doc_same_version_never_contradicts():
    corpus = make_corpus([
        {"text": POLICY, "doc": "d", "version": 2, "authority": 0.9, "created": 0.0},
        {"text": RUMOR, "doc": "d", "version": 2, "authority": 0.3, "created": 5.0},
    ])
    res = consolidate(corpus, 10.0, ConsolidationParams())
    assert res.contradictions == [] and res.negative_feedback.tolist() == [0.0, 0.0]
    assert rows_of(res.depends_on) == [[], []]  # same doc: no detected dependency either
    # the same pair in another version of the same document (no supersession link) is a contradiction
    corpus.version[1] = 3
    assert consolidate(corpus, 10.0, ConsolidationParams()).contradictions == [(0, 1, 1)]


def test_similar_texts_are_not_contradictions():
    a = "remote work is allowed two days per week for all staff"
    b = "remote work is allowed two days per week for most staff"
    assert content_similarity(a, b) >= 0.4
    corpus = make_corpus([{"text": a, "doc": "p", "authority": 0.9, "created": 0.0},
                          {"text": b, "doc": "w", "authority": 0.75, "created": 0.0}])
    res = consolidate(corpus, 1.0, ConsolidationParams())
    assert res.contradictions == []
    # Jaccard 10/12 > 0.35: the wiki chunk (0.75) depends on the policy chunk (0.9)
    assert rows_of(res.depends_on) == [[], [0]]
    # equal authority and creation time: the later index depends on the earlier
    corpus.authority[1] = 0.9
    assert rows_of(consolidate(corpus, 1.0, ConsolidationParams()).depends_on) == [[], [0]]
    corpus.authority[0] = 0.5
    assert rows_of(consolidate(corpus, 1.0, ConsolidationParams()).depends_on) == [[1], []]
    assert rows_of(consolidate(corpus, 1.0, ConsolidationParams(detect_dependencies=False)).depends_on) == [[], []]


# ---- consolidate: dependency chain, supersession, ripple, transfer ----------------------------------------

def chain_corpus() -> Corpus:
    # 0 A (v1), 1 B depends on A, 2 C depends on B, 3 D depends on C, 4 A2 supersedes A, in force from 10
    return make_corpus([
        {"text": "alpha bravo charlie", "doc": "A", "version": 1, "authority": 0.9, "created": 0.0,
         "valid_to": 10.0},
        {"text": "delta echo foxtrot", "doc": "B", "authority": 0.85, "created": 1.0, "depends": [0]},
        {"text": "golf hotel india", "doc": "C", "authority": 0.75, "created": 2.0, "depends": [1]},
        {"text": "juliet kilo lima", "doc": "D", "authority": 0.5, "created": 3.0, "depends": [2]},
        {"text": "mike november oscar", "doc": "A", "version": 2, "authority": 0.9, "created": 8.0,
         "valid_from": 10.0, "supersedes": 0},
    ])


def test_chain_ripple_and_transfer():
    res = consolidate(chain_corpus(), 20.0, ConsolidationParams())
    # A changed: B (hop 1) 0.85 - 0.15 = 0.70; C (hop 2) 0.75 - 0.075 = 0.675; D (hop 3) untouched 0.5
    np.testing.assert_allclose(res.base_confidence, [0.9, 0.70, 0.675, 0.5, 0.9], rtol=0, atol=1e-12)
    ripples = [(e["vector"], e["cause"], e["depth"]) for e in res.events if e["kind"] == "ripple"]
    assert ripples == [(1, 0, 1), (2, 0, 2)]
    assert res.contradictions == [] and res.negative_feedback.tolist() == [0.0] * 5
    # B -> A becomes B -> A2
    assert rows_of(res.depends_on) == [[], [4], [1], [2], []]
    # A: 0; B: out 1 + in 1; C: 1 + 1; D: 1 + 0; A2: 0 + 1
    assert res.edge_count.tolist() == [0, 2, 2, 1, 1]


def test_chain_without_transfer():
    res = consolidate(chain_corpus(), 20.0, ConsolidationParams(transfer_dependencies=False))
    np.testing.assert_allclose(res.base_confidence, [0.9, 0.70, 0.675, 0.5, 0.9], rtol=0, atol=1e-12)
    assert rows_of(res.depends_on) == [[], [0], [1], [2], []]
    assert res.edge_count.tolist() == [1, 2, 2, 1, 0]


def test_chain_before_successor_in_force():
    res = consolidate(chain_corpus(), 9.0, ConsolidationParams())  # A2 in force only from 10
    np.testing.assert_allclose(res.base_confidence, [0.9, 0.85, 0.75, 0.5, 0.9], rtol=0, atol=1e-12)
    assert [e for e in res.events if e["kind"] == "ripple"] == []
    assert rows_of(res.depends_on) == [[], [0], [1], [2], []]


def test_chain_custom_ripple_params():
    from smartvector_bench.systems.smartvector.ripple import RippleParams
    res = consolidate(chain_corpus(), 20.0, ConsolidationParams(ripple=RippleParams(penalty=0.3, max_depth=3,
                                                                                    floor=0.4)))
    # B 0.85 - 0.3 = 0.55; C 0.75 - 0.15 = 0.60; D 0.5 - 0.1 = 0.4 (= floor)
    np.testing.assert_allclose(res.base_confidence, [0.9, 0.55, 0.60, 0.4, 0.9], rtol=0, atol=1e-12)


def test_deprecated_dependant_is_skipped_by_ripple():
    rows = [
        {"text": "alpha bravo", "doc": "A", "authority": 0.9, "created": 0.0, "valid_to": 10.0},
        {"text": "charlie delta", "doc": "B", "authority": 0.8, "created": 0.0, "depends": [0], "valid_to": 10.0},
        {"text": "echo foxtrot", "doc": "C", "authority": 0.7, "created": 0.0, "depends": [1]},
        {"text": "golf hotel", "doc": "A", "version": 2, "authority": 0.9, "created": 5.0, "valid_from": 10.0,
         "supersedes": 0},
        {"text": "india juliet", "doc": "B", "version": 2, "authority": 0.8, "created": 5.0, "valid_from": 10.0,
         "supersedes": 1},
    ]
    res = consolidate(make_corpus(rows), 20.0, ConsolidationParams())
    # A's dependant B is deprecated: skipped and not traversed from A; B itself is an origin -> C at hop 1
    np.testing.assert_allclose(res.base_confidence, [0.9, 0.8, 0.55, 0.9, 0.8], rtol=0, atol=1e-12)
    # transfer: B->A becomes B2->A2, C->B becomes C->B2
    assert rows_of(res.depends_on) == [[], [], [4], [], [3]]


def test_latest_successor_follows_chain_in_force():
    sup_by = np.array([1, 2, -1, -1])
    vf = np.array([0.0, 10.0, 20.0, 0.0])
    assert latest_successor(sup_by, vf, 5.0).tolist() == [0, 1, 2, 3]
    assert latest_successor(sup_by, vf, 15.0).tolist() == [1, 1, 2, 3]
    assert latest_successor(sup_by, vf, 25.0).tolist() == [2, 2, 2, 3]


def test_reverse():
    dep = Ragged.from_lists([[], [0], [0, 1]])
    assert rows_of(reverse(dep)) == [[1, 2], [2], []]


def test_disabled_keeps_everything():
    res = consolidate(contradiction_corpus(), 60.0, ConsolidationParams(enabled=False))
    assert res.contradictions == [] and res.events == []
    np.testing.assert_allclose(res.base_confidence, [0.9, 0.3, 0.75])
    assert rows_of(res.depends_on) == [[], [], [1]]
    res = consolidate(chain_corpus(), 20.0, ConsolidationParams(enabled=False))
    assert rows_of(res.depends_on) == [[], [0], [1], [2], []]  # no transfer
    np.testing.assert_allclose(res.base_confidence, [0.9, 0.85, 0.75, 0.5, 0.9])


@pytest.mark.parametrize("field, value", [("detector", "embedding"), ("verdict", "demot"),
                                          ("tie_break", "random")])
def test_invalid_params_raise_naming_key(field, value):
    from smartvector_bench.core.settings import section

    with pytest.raises(BenchError, match=rf"^consolidation\.{field}={value}: unknown; allowed: "):
        section(ConsolidationParams, {field: value}, "consolidation")


def test_t5_verdicts_read_time_recall_and_the_1m_run():
    from smartvector_bench.tools.perf.summary import summary_rows
    from smartvector_bench.tools.perf.targets import evaluate_targets
    from smartvector_bench.tools.perf.timing import rows

    def cons(system, n, metric, value, vectors="synthetic"):
        return rows("consolidation", system, n, vectors, metric, value, "x")

    runs = cons("smartvector_distinct_k20", 100_000, "seconds", [20.0, 25.0, 40.0])
    runs += cons("smartvector_distinct_k20", 100_000, "peak_rss_mb", [900.0, 950.0, 1000.0])
    for vectors, found, missed in (("synthetic", 38, 0), ("synthetic:versioned_policies_large", 42, 2)):
        for system, f in (("smartvector_distinct_k20", found), ("smartvector_ann_k20", 0)):
            runs += cons(system, 10_000, "found_contradictions", f, vectors)
            runs += cons(system, 10_000, "missed_contradictions", found + missed - f, vectors)
            runs += cons(system, 10_000, "recall_contradictions", f / (found + missed), vectors)
            runs += cons(system, 10_000, "recall_edges", 0.5, vectors)
    runs += cons("smartvector_distinct_k100", 10_000, "seconds", 9.0)  # a recall_k run: not the profile's k
    t = {x["id"]: x for x in evaluate_targets(summary_rows(runs))}
    assert t["T5"]["n_vectors"] == 100_000 and t["T5"]["measured"] == 25.0 and t["T5"]["verdict"] == "met"
    assert "smartvector_distinct_k20" in t["T5"]["what"]
    assert t["T5r"]["measured"] == pytest.approx(42 / 44) and t["T5r"]["verdict"] == "met"  # the worst dataset
    assert "42 of 44 contradictions" in t["T5r"]["detail"] and "smartvector_ann_k20 on synthetic" in t["T5r"]["detail"]
    assert t["T5m"]["verdict"] == "not measured" and t["T5t"]["verdict"] == "not measured"
    runs += cons("smartvector_distinct_k20", 1_000_000, "seconds", 310.0)
    runs += cons("smartvector_distinct_k20", 1_000_000, "peak_rss_mb", 3500.0)
    runs = [r for r in runs if not (r.metric == "recall_contradictions" and r.value == 1.0)]
    runs += cons("smartvector_distinct_k20", 10_000, "recall_contradictions", 0.5)
    t = {x["id"]: x for x in evaluate_targets(summary_rows(runs))}
    assert t["T5m"]["verdict"] == "met" and t["T5t"]["verdict"] == "missed" and t["T5r"]["verdict"] == "missed"


def test_bench_profile_consolidation_runs_and_reps():
    from smartvector_bench.tools.perf.cases import consolidation_reps, consolidation_runs

    c = {"k": 20, "pairs": ["distinct", "knn"], "knn_max_size": 100_000, "all_pairs_size": 10_000,
         "recall_k": [100], "reps": 3, "reps_above": {100_000: 1}}
    assert consolidation_runs(c, 10_000) == [("distinct", 20), ("distinct", 100), ("knn", 20), ("knn", 100)]
    assert consolidation_runs(c, 100_000) == [("distinct", 20), ("knn", 20)]
    assert consolidation_runs(c, 1_000_000) == [("distinct", 20)]  # knn left out above knn_max_size
    assert consolidation_runs({"k": 5, "all_pairs_size": 1}, 10) == [("distinct", 5)]
    assert [consolidation_reps(c, n) for n in (10_000, 100_000, 1_000_000)] == [3, 3, 1]
    c["k"] = {"distinct": 10, "knn": 20}  # one k per generator
    assert consolidation_runs(c, 100_000) == [("distinct", 10), ("knn", 20)]
