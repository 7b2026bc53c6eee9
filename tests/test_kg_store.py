"""kg_smartvector: the knowledge-graph store of the SmartVector spec for sqlite-knowledge-graph on a real
SQLite file (the API, confidence and its log, the confidence formula, dependencies and the ripple)."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.kg_smartvector.store import confidence_formula

from .kg_cases import kg  # noqa: F401 - a KnowledgeGraph on a fresh SQLite file (a fixture)


# ---- the knowledge-graph API ---------------------------------------------------------------------------------

def test_insert_entity_uses_the_callers_time_and_the_spec_defaults(kg):
    eid = kg.insert_entity("chunk", "a", {"k": 1}, at=12.5)
    e = kg.get_entity(eid)
    assert (e["created_at"], e["updated_at"]) == (12.5, 12.5)  # simulated time, not the wall clock
    assert (e["confidence"], e["access_count"], e["last_accessed"]) == (1.0, 0, None)
    assert (e["base_confidence"], e["decay_rate"]) == (1.0, 0.05)
    assert e["properties"] == {"k": 1}
    with pytest.raises(BenchError, match="valid_until=5.0 must be after valid_from=5.0"):
        kg.insert_entity("chunk", "b", at=0.0, valid_from=5.0, valid_until=5.0)


def test_access_increments_count_and_sets_last_accessed(kg):
    eid = kg.insert_entity("chunk", "a", at=0.0, base_confidence=0.5, decay_rate=0.0)
    assert kg.access_entity(eid, at=3.0) == pytest.approx(0.5 + 0.1 * math.log(2))
    e = kg.get_entity(eid)
    assert (e["access_count"], e["last_accessed"]) == (1, 3.0)
    kg.access_entity(eid, at=7.0)
    e = kg.get_entity(eid)
    assert (e["access_count"], e["last_accessed"]) == (2, 7.0)
    assert kg.get_confidence(eid, 7.0) == pytest.approx(0.5 + 0.1 * math.log(3))  # access reinforces
    assert [r["reason"] for r in kg.confidence_log(eid)] == ["access", "access"]
    with pytest.raises(BenchError, match="entity 99: no such entity"):
        kg.access_entity(99, at=1.0)


def test_created_after_and_before_filters_at_the_edges(kg):
    ids = {t: kg.insert_entity("chunk" if t != 20.0 else "doc", f"e{t}", at=t) for t in (10.0, 20.0, 30.0)}

    def names(**kw):
        return [e["name"] for e in kg.query_entities(**kw)]

    assert names() == ["e10.0", "e20.0", "e30.0"]
    assert names(created_after=20.0) == ["e20.0", "e30.0"]          # inclusive lower edge
    assert names(created_after=np.nextafter(20.0, 99)) == ["e30.0"]
    assert names(created_before=20.0) == ["e10.0"]                  # exclusive upper edge
    assert names(created_before=np.nextafter(20.0, 99)) == ["e10.0", "e20.0"]
    assert names(created_after=10.0, created_before=30.0) == ["e10.0", "e20.0"]
    assert names(created_after=30.0, created_before=30.0) == []
    # adjacent windows partition the entities
    assert names(created_before=20.0) + names(created_after=20.0) == names()
    assert names(entity_type="chunk", created_after=10.0) == ["e10.0", "e30.0"]
    assert names(created_after=0.0, limit=1) == ["e10.0"]
    assert ids[20.0] == kg.query_entities(entity_type="doc")[0]["id"]


def test_update_confidence_writes_the_log_with_old_and_new_values(kg):
    # the spec's scenario: confidence 0.8, feedback -0.2 -> 0.6, logged
    eid = kg.insert_entity("chunk", "a", at=5.0, base_confidence=0.8)
    old, new = kg.update_confidence(eid, -0.2, at=5.0, reason="user said wrong")
    assert (old, new) == (pytest.approx(0.8), pytest.approx(0.6))
    old2, new2 = kg.update_confidence(eid, 0.1, at=5.0)
    assert (old2, new2) == (pytest.approx(0.6), pytest.approx(0.7))
    log = kg.confidence_log(eid)
    assert [(r["old_value"], r["new_value"], r["reason"], r["timestamp"]) for r in log] == [
        (pytest.approx(0.8), pytest.approx(0.6), "user said wrong", 5.0),
        (pytest.approx(0.6), pytest.approx(0.7), "feedback", 5.0)]
    assert kg.get_entity(eid)["confidence"] == pytest.approx(0.7)  # the snapshot column
    assert kg.feedback_sum(eid, 5.0) == pytest.approx(-0.1)
    # feedback counts from its own time on: as of before it, only the decay
    eid2 = kg.insert_entity("chunk", "b", at=0.0, base_confidence=0.8, decay_rate=0.0)
    kg.update_confidence(eid2, -0.5, at=10.0)
    assert kg.get_confidence(eid2, 9.0) == pytest.approx(0.8)
    assert kg.get_confidence(eid2, 10.0) == pytest.approx(0.3)
    with pytest.raises(BenchError, match="feedback=nan: must be a finite number"):
        kg.update_confidence(eid2, float("nan"), at=10.0)


# ---- the confidence formula ----------------------------------------------------------------------------------

def test_confidence_formula_hand_computed():
    # 0.9 e^{-0.05*10} + 0.1 ln(1+3) - 0.2 = 0.9*0.6065306597 + 0.1386294361 - 0.2
    assert confidence_formula(0.9, 0.05, 10.0, 3, -0.2) == pytest.approx(0.4845070298, abs=1e-9)
    # clamped at 1: 1 + 0.1 ln 6 = 1.179 -> 1 (the crate returns 1.179)
    assert confidence_formula(1.0, 0.05, 0.0, 5, 0.0) == 1.0
    # clamped at 0: 0.5 + clamp(-3) = 0.5 - 1 = -0.5 -> 0
    assert confidence_formula(0.5, 0.05, 0.0, 0, -3.0) == 0.0
    # the feedback sum is clamped to [-1, 1] before it is added: 1 + 0.1 ln 10 - 1 = 0.2302585
    # (unclamped: 1 + 0.2302585 - 1.5 < 0 -> 0)
    assert confidence_formula(1.0, 0.05, 0.0, 9, -1.5) == pytest.approx(0.1 * math.log(10))
    # a positive sum is capped at +1 too: 0.0 base after long decay + 1 = 1.0, not 1.5
    assert confidence_formula(0.2, 0.05, 1000.0, 0, 1.5) == pytest.approx(1.0)
    assert confidence_formula(0.2, 0.05, 1000.0, 0, 0.7) == pytest.approx(0.7 + 0.2 * math.exp(-50))
    # days before creation count as 0 (no growth); vectorised with broadcasting
    out = confidence_formula(np.array([0.9, 0.5]), 0.05, np.array([[-5.0], [20.0]]), 0, 0.0)
    np.testing.assert_allclose(out, [[0.9, 0.5], [0.9 * math.exp(-1), 0.5 * math.exp(-1)]])


def test_store_confidence_matches_the_hand_computed_value(kg):
    eid = kg.insert_entity("chunk", "a", at=100.0, base_confidence=0.9)
    for t in (101.0, 102.0, 103.0):
        kg.access_entity(eid, t)
    kg.update_confidence(eid, -0.2, at=104.0)
    assert kg.get_confidence(eid, 110.0) == pytest.approx(0.4845070298, abs=1e-9)
    other = kg.insert_entity("chunk", "b", at=100.0, base_confidence=1.0)
    kg.update_confidence(other, -0.9, at=100.0)
    kg.update_confidence(other, -0.9, at=100.0)  # sum -1.8 -> clamped to -1 -> 0
    kg.update_confidence(other, +0.5, at=100.0)  # sum -1.3 -> -1: still 0 (the crate: 1 - 1.3 = -0.3)
    assert kg.get_confidence(other, 100.0) == 0.0
    # the vectorised path agrees with the per-entity one
    ids, conf = kg.confidences(110.0)
    assert ids.tolist() == [eid, other]
    np.testing.assert_allclose(conf, [kg.get_confidence(eid, 110.0), kg.get_confidence(other, 110.0)])
    mat = kg.confidence_matrix(np.array([100.0, 110.0, 100.0]))
    np.testing.assert_allclose(mat[1], conf)
    np.testing.assert_allclose(mat[0], mat[2])
    # a subset of the entities: another entity's feedback is never attributed to them
    third = kg.insert_entity("chunk", "c", at=100.0, base_confidence=0.5, decay_rate=0.0)
    cols = {k: v[[0, 2]] for k, v in kg.entity_columns().items()}
    sub = kg.confidence_matrix(np.array([110.0]), cols)[0]
    np.testing.assert_allclose(sub, [kg.get_confidence(eid, 110.0), kg.get_confidence(third, 110.0)])
    assert sub[1] == pytest.approx(0.5)


# ---- dependencies and ripple ---------------------------------------------------------------------------------

def test_add_dependency_rejects_unknown_types(kg):
    a = kg.insert_entity("chunk", "a", at=0.0)
    b = kg.insert_entity("chunk", "b", at=0.0)
    with pytest.raises(BenchError, match="dep_type='cites': unknown; allowed: depends_on, depended_by, "
                                         "supersedes, contradicts"):
        kg.add_dependency(a, b, "cites", at=1.0)
    with pytest.raises(BenchError, match="cannot depends_on itself"):
        kg.add_dependency(a, a, "depends_on", at=1.0)
    with pytest.raises(BenchError, match="entity 42: no such entity"):
        kg.add_dependency(a, 42, "depends_on", at=1.0)
    first = kg.add_dependency(a, b, "depends_on", at=1.0)
    assert kg.add_dependency(a, b, "depends_on", at=2.0) == first  # no duplicate row
    deps = kg.dependencies()
    assert deps["dep_type"].tolist() == ["depends_on"] and deps["created_at"].tolist() == [1.0]
    with pytest.raises(sqlite3.IntegrityError):  # the table's CHECK constraint too
        kg.conn.execute("INSERT INTO kg_dependencies (source_id, target_id, dep_type, created_at) "
                        "VALUES (?, ?, 'cites', 0)", (b, a))


def test_ripple_depth_two_halving_per_hop_and_logged(kg):
    ids = {n: kg.insert_entity("chunk", n, at=0.0, base_confidence=0.8, decay_rate=0.0) for n in "BCDEFGA"}
    B, C, D, E, F, G, A = (ids[n] for n in "BCDEFGA")
    kg.add_dependency(C, B, "depends_on", at=1.0)    # hop 1
    kg.add_dependency(B, F, "depended_by", at=1.0)   # F requires B: hop 1
    kg.add_dependency(D, C, "depends_on", at=1.0)    # hop 2
    kg.add_dependency(E, D, "depends_on", at=1.0)    # hop 3: untouched
    kg.add_dependency(B, D, "depends_on", at=1.0)    # a cycle back to B: B is never penalised
    kg.add_dependency(G, B, "contradicts", at=1.0)   # not a dependency: untouched
    kg.add_dependency(A, B, "supersedes", at=1.0)    # the successor: untouched
    hits = kg.ripple(B, at=50.0, penalty=0.2)
    assert hits == [(C, 1, 0.2), (F, 1, 0.2), (D, 2, 0.1)]
    assert kg.get_confidence(C, 50.0) == pytest.approx(0.6)
    assert kg.get_confidence(F, 50.0) == pytest.approx(0.6)
    assert kg.get_confidence(D, 50.0) == pytest.approx(0.7)
    for untouched in (B, E, G, A):
        assert kg.get_confidence(untouched, 50.0) == pytest.approx(0.8)
    # the penalty counts from the ripple's time on (retrieval at an earlier as_of does not see it)
    assert kg.get_confidence(C, 49.0) == pytest.approx(0.8)
    log = kg.confidence_log()
    assert [(r["entity_id"], r["old_value"], r["new_value"], r["reason"], r["timestamp"]) for r in log] == [
        (C, pytest.approx(0.8), pytest.approx(0.6), f"ripple from entity {B} at depth 1", 50.0),
        (F, pytest.approx(0.8), pytest.approx(0.6), f"ripple from entity {B} at depth 1", 50.0),
        (D, pytest.approx(0.8), pytest.approx(0.7), f"ripple from entity {B} at depth 2", 50.0)]
    assert kg.counts()["ripple_rows"] == 3


def test_ripple_default_penalty_and_only_edges_known_at_the_time(kg):
    B, C, D = (kg.insert_entity("chunk", n, at=0.0, decay_rate=0.0, base_confidence=0.5) for n in "BCD")
    kg.add_dependency(C, B, "depends_on", at=1.0)
    kg.add_dependency(D, C, "depends_on", at=20.0)  # D starts depending after the change below
    assert kg.ripple(B, at=10.0) == [(C, 1, 0.15)]
    assert kg.ripple(B, at=30.0) == [(C, 1, 0.15), (D, 2, 0.075)]
    assert kg.get_confidence(C, 30.0) == pytest.approx(0.2)
