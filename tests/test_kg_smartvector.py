"""kg_smartvector: the SmartVector spec for sqlite-knowledge-graph on a real SQLite file (schema migration, the
knowledge-graph API, confidence, ripple, PageRank, the retriever end to end)."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest
from omegaconf import OmegaConf

from experiments.main import run
from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.kg_smartvector import schema
from smartvector_bench.systems.kg_smartvector.pagerank import graph_importance, pagerank
from smartvector_bench.systems.kg_smartvector.schema import create_v2, ensure_schema, user_version
from smartvector_bench.systems.kg_smartvector.store import KnowledgeGraph, confidence_formula
from smartvector_bench.systems import build_retriever

from .conftest import TINY, compose_config

V2_ENTITY_COLS = ["id", "entity_type", "name", "properties", "created_at", "updated_at"]
V2_RELATION_COLS = ["id", "source_id", "target_id", "rel_type", "weight", "properties", "created_at"]
SPEC_ENTITY_COLS = ["confidence", "access_count", "last_accessed", "valid_from", "valid_until", "base_confidence",
                    "decay_rate"]
SPEC_RELATION_COLS = ["confidence", "valid_from", "valid_until"]


def connect(path) -> sqlite3.Connection:
    return sqlite3.connect(str(path), isolation_level=None)


def make_v2(path) -> sqlite3.Connection:
    """A schema-v2 database with rows in every table."""
    conn = connect(path)
    create_v2(conn)
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO kg_entities VALUES (?, ?, ?, ?, ?, ?)", [
        (1, "policy", "leave days", '{"days": 25}', 100.5, 101.0),
        (2, "runbook", "hr setup", '{}', 200.0, 200.0),
        (7, "person", "Ada", '{"role": "owner"}', 300.25, 310.0)])
    conn.executemany("INSERT INTO kg_relations VALUES (?, ?, ?, ?, ?, ?, ?)", [
        (1, 2, 1, "mentions", 0.5, '{"by": "x"}', 205.0),
        (2, 7, 1, "owns", 1.0, '{}', 301.0)])
    conn.executemany("INSERT INTO kg_vectors VALUES (?, ?, ?)", [
        (1, np.array([0.6, 0.8], dtype="<f4").tobytes(), 2),
        (2, np.array([1.0, 0.0], dtype="<f4").tobytes(), 2)])
    conn.execute("COMMIT")
    return conn


def dump(conn, table: str, cols: list[str]) -> list[tuple]:
    return conn.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY rowid").fetchall()


def table_names(conn) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


# ---- schema: v2 -> v3 migration ------------------------------------------------------------------------------

def test_migration_v2_to_v3_preserves_data_and_adds_the_spec_columns_and_tables(tmp_path):
    conn = make_v2(tmp_path / "kg.sqlite")
    assert user_version(conn) == 2
    before = {t: dump(conn, t, c) for t, c in (("kg_entities", V2_ENTITY_COLS),
                                                ("kg_relations", V2_RELATION_COLS),
                                                ("kg_vectors", ["entity_id", "vector", "dimension"]))}
    assert ensure_schema(conn) == 3
    assert user_version(conn) == 3
    # every row and value kept
    for t, c in (("kg_entities", V2_ENTITY_COLS), ("kg_relations", V2_RELATION_COLS),
                 ("kg_vectors", ["entity_id", "vector", "dimension"])):
        assert dump(conn, t, c) == before[t], t
    # exactly the spec's columns added, with their defaults on the existing rows
    assert schema.columns(conn, "kg_entities") == V2_ENTITY_COLS + SPEC_ENTITY_COLS
    assert schema.columns(conn, "kg_relations") == V2_RELATION_COLS + SPEC_RELATION_COLS
    assert dump(conn, "kg_entities", SPEC_ENTITY_COLS) == [(1.0, 0, None, None, None, 1.0, 0.05)] * 3
    assert dump(conn, "kg_relations", SPEC_RELATION_COLS) == [(1.0, None, None)] * 2
    # new tables with the spec's columns (plus a row id)
    assert {"kg_dependencies", "kg_confidence_log"} <= table_names(conn)
    assert schema.columns(conn, "kg_dependencies") == ["id", "source_id", "target_id", "dep_type", "created_at"]
    assert schema.columns(conn, "kg_confidence_log") == ["id", "entity_id", "old_value", "new_value", "reason",
                                                         "timestamp"]
    # the second run is a no-op: same schema, same data, same version
    master = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    data = {t: dump(conn, t, ["*"]) for t in table_names(conn)}
    assert ensure_schema(conn) == 3
    assert conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall() == master
    assert {t: dump(conn, t, ["*"]) for t in table_names(conn)} == data
    assert user_version(conn) == 3


def test_opening_a_v2_file_migrates_it_and_the_old_vectors_are_readable(tmp_path):
    make_v2(tmp_path / "kg.sqlite").close()
    with KnowledgeGraph(tmp_path / "kg.sqlite") as kg:
        assert kg.schema_version() == 3
        assert kg.get_entity(7)["properties"] == {"role": "owner"}
        ids, mat = kg.vectors()
        assert ids.tolist() == [1, 2]
        np.testing.assert_array_equal(mat, np.array([[0.6, 0.8], [1.0, 0.0]], dtype=np.float32))
        # a pre-spec entity has the defaults: base 1, decay 0.05, created at 100.5
        assert kg.get_confidence(1, 110.5) == pytest.approx(math.exp(-0.5))


def test_migration_is_one_transaction(tmp_path, monkeypatch):
    """A failure part-way through leaves the v2 database exactly as it was."""
    conn = make_v2(tmp_path / "kg.sqlite")
    master = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    monkeypatch.setattr(schema, "V3_TABLES", schema.V3_TABLES + ("CREATE TABLE broken (",))
    with pytest.raises(sqlite3.OperationalError):
        ensure_schema(conn)
    assert user_version(conn) == 2
    assert conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall() == master
    assert schema.columns(conn, "kg_entities") == V2_ENTITY_COLS
    monkeypatch.undo()
    assert ensure_schema(conn) == 3


def test_fresh_database_goes_straight_to_v3_and_unknown_versions_are_refused(tmp_path):
    conn = connect(tmp_path / "fresh.sqlite")
    assert ensure_schema(conn) == 3
    assert schema.columns(conn, "kg_entities") == V2_ENTITY_COLS + SPEC_ENTITY_COLS
    other = connect(tmp_path / "v4.sqlite")
    other.execute("PRAGMA user_version = 4")
    with pytest.raises(BenchError, match="schema version 4: newer"):
        ensure_schema(other)
    odd = connect(tmp_path / "odd.sqlite")
    odd.execute("CREATE TABLE kg_entities (id INTEGER PRIMARY KEY)")
    with pytest.raises(BenchError, match="schema version 0 but tables kg_entities exist"):
        ensure_schema(odd)


def test_wal_mode_is_on(tmp_path):
    with KnowledgeGraph(tmp_path / "kg.sqlite") as kg:
        assert kg.journal_mode() == "wal"
        kg.insert_entity("chunk", "a", at=0.0)
        assert (tmp_path / "kg.sqlite-wal").exists()
        # a second, independent connection sees WAL too (it is a property of the file)
        assert connect(tmp_path / "kg.sqlite").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# ---- the knowledge-graph API ---------------------------------------------------------------------------------

@pytest.fixture
def kg(tmp_path):
    graph = KnowledgeGraph(tmp_path / "kg.sqlite")
    yield graph
    graph.close()


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


# ---- PageRank ------------------------------------------------------------------------------------------------

def test_pagerank_three_nodes_closed_form():
    """0 -> 2, 1 -> 2 (both rely on 2); 2 is dangling. With d = 0.85, n = 3 and a = p0 = p1:
    a = 0.05 + 0.85 p2 / 3 and p2 = 1 - 2a give p2 = 27/47, a = 10/47; normalised: [10/27, 10/27, 1]."""
    p = pagerank(3, np.array([0, 1]), np.array([2, 2]))
    np.testing.assert_allclose(p, [10 / 47, 10 / 47, 27 / 47], atol=1e-9)
    g = graph_importance(3, [0, 1], [2, 2], ["depends_on", "depends_on"])
    np.testing.assert_allclose(g, [10 / 27, 10 / 27, 1.0], atol=1e-9)


def test_pagerank_four_node_chain_closed_form():
    """0 -> 1 -> 2 and an isolated 3; 2 and 3 dangling. Every node gets b = 0.0375 + 0.2125 (p2 + p3);
    p0 = p3 = b, p1 = 1.85 b, p2 = b + 0.85 p1 = 2.5725 b, total 6.4225 b = 1.
    Normalised to the max: [1/2.5725, 1.85/2.5725, 1, 1/2.5725] = [0.388727, 0.719145, 1, 0.388727]."""
    b = 1 / 6.4225
    p = pagerank(4, np.array([0, 1]), np.array([1, 2]))
    np.testing.assert_allclose(p, [b, 1.85 * b, 2.5725 * b, b], atol=1e-9)
    assert p.sum() == pytest.approx(1.0)
    # depended_by is the same relation reversed: "1 depended_by 0" == "0 depends_on 1"
    g = graph_importance(4, [1, 1], [0, 2], ["depended_by", "depends_on"])
    np.testing.assert_allclose(g, [1 / 2.5725, 1.85 / 2.5725, 1.0, 1 / 2.5725], atol=1e-9)


def test_pagerank_edge_cases():
    np.testing.assert_allclose(pagerank(3, [], []), [1 / 3] * 3)  # no edges: all dangling, uniform
    assert pagerank(0, [], []).shape == (0,)
    np.testing.assert_allclose(graph_importance(2, [], [], [], mode="in_degree"), [0.0, 0.0])
    with pytest.raises(BenchError, match="damping=1.0: must be in"):
        pagerank(2, [0], [1], damping=1.0)
    with pytest.raises(BenchError, match="graph_importance=hits: unknown; allowed: pagerank, in_degree"):
        graph_importance(2, [0], [1], ["depends_on"], mode="hits")


def test_supersedes_never_raises_the_superseded_entity(kg):
    """F depends on B, C and E depend on D; then A supersedes B. PageRank: B's importance must not increase.
    in_degree (the crate v0.13, reproduced): B's rises from 1/2 to 2/2, as the crate's does."""
    A, B, C, D, E, F = (kg.insert_entity("chunk", n, at=0.0) for n in "ABCDEF")
    kg.add_dependency(F, B, "depends_on", at=1.0)
    kg.add_dependency(C, D, "depends_on", at=1.0)
    kg.add_dependency(E, D, "depends_on", at=1.0)
    ids, before = kg.graph_importance("pagerank")
    _, deg_before = kg.graph_importance("in_degree")
    kg.add_dependency(A, B, "supersedes", at=2.0)
    _, after = kg.graph_importance("pagerank")
    _, deg_after = kg.graph_importance("in_degree")
    b = ids.tolist().index(B)
    assert after[b] <= before[b]
    np.testing.assert_allclose(after, before)  # supersedes rows are excluded altogether
    np.testing.assert_allclose(deg_before, [0, 0.5, 0, 1, 0, 0])
    np.testing.assert_allclose(deg_after, [0, 1, 0, 1, 0, 0])  # the crate's fault: B raised
    # contradicts counts in the crate's in-degree, never in PageRank
    kg.add_dependency(C, A, "contradicts", at=3.0)
    np.testing.assert_allclose(kg.graph_importance("pagerank")[1], before)
    np.testing.assert_allclose(kg.graph_importance("in_degree")[1], [0.5, 1, 0, 1, 0, 0])
    # as of before the supersedes row, both are the old ones
    np.testing.assert_allclose(kg.graph_importance("in_degree", at=1.5)[1], deg_before)


def test_in_degree_counts_depended_by_for_its_target_like_the_crate():
    # "0 depended_by 1" means 1 requires 0; the crate still counts the row for target 1
    np.testing.assert_allclose(graph_importance(2, [0], [1], ["depended_by"], mode="in_degree"), [0.0, 1.0])
    pr = graph_importance(2, [0], [1], ["depended_by"], mode="pagerank")
    assert pr[0] == 1.0 and pr[1] < 1.0  # PageRank credits the one relied upon


# ---- the retriever -------------------------------------------------------------------------------------------

INF = np.inf


KG_TARGET = "smartvector_bench.systems.kg_smartvector.retriever.KGSmartVector"


def kg_cfg(**overrides) -> dict:
    cfg = OmegaConf.to_container(OmegaConf.load(f"{CONF_DIR}/retriever/kg_smartvector.yaml"), resolve=True)
    cfg.update(overrides)
    return cfg


def tiny_corpus() -> tuple[Corpus, np.ndarray]:
    """c0 policy v1 [0, 100); c1 v2 (created 90, valid from 100) supersedes c0; c2 runbook depends on c0; c3
    depends on c2; c4 a recent rumour; c5 created after serve time (130)."""
    rows = [
        {"created": 0.0, "vf": 0.0, "vt": 100.0, "auth": 0.9, "v": [1, 0, 0], "src": "policy_doc", "ver": 1},
        {"created": 90.0, "vf": 100.0, "vt": INF, "auth": 0.9, "v": [0.99, 0.14, 0], "sup": 0, "src": "policy_doc", "ver": 2},
        {"created": 10.0, "vf": 10.0, "vt": INF, "auth": 0.85, "v": [0, 1, 0], "dep": [0], "src": "technical_doc", "ver": 1},
        {"created": 20.0, "vf": 20.0, "vt": INF, "auth": 0.85, "v": [0, 0.7, 0.7], "dep": [2], "src": "technical_doc", "ver": 1},
        {"created": 125.0, "vf": 125.0, "vt": INF, "auth": 0.3, "v": [0.9, 0, 0.43], "src": "slack", "ver": 1},
        {"created": 200.0, "vf": 200.0, "vt": INF, "auth": 0.9, "v": [1, 0, 0], "src": "policy_doc", "ver": 3},
    ]
    n = len(rows)
    corpus = Corpus(
        ids=[f"c{i}" for i in range(n)], titles=[""] * n, texts=[f"t{i}" for i in range(n)],
        doc_id=np.array(["pol", "pol", "rb", "rb", "chat", "pol"], dtype=object),
        offset_start=np.array([0, 0, 0, 3, 0, 0], dtype=np.int64),  # c3 follows c2 in the runbook ("t2\nt3")
        offset_end=np.array([2, 2, 2, 5, 2, 2], dtype=np.int64),
        version=np.array([r["ver"] for r in rows], dtype=np.int64),
        source=np.array([r["src"] for r in rows], dtype=object),
        authority=np.array([r["auth"] for r in rows]),
        created_at=np.array([r["created"] for r in rows]),
        valid_from=np.array([r["vf"] for r in rows]), valid_to=np.array([r["vt"] for r in rows]),
        depends_on=Ragged.from_lists([r.get("dep", []) for r in rows]),
        supersedes=np.array([r.get("sup", -1) for r in rows], dtype=np.int64),
        index_of={f"c{i}": i for i in range(n)})
    v = np.array([r["v"] for r in rows], dtype=np.float32)
    return corpus, v / np.linalg.norm(v, axis=1, keepdims=True)


def test_retriever_writes_the_graph_to_a_real_sqlite_file(tmp_path):
    corpus, vectors = tiny_corpus()
    path = tmp_path / "db" / "kg.sqlite"
    r = build_retriever("kg_smartvector", kg_cfg(db_path=str(path), decay_rate=0.01))
    r.index(corpus, vectors, serve_time=130.0)
    info = r.describe()
    assert info["db_path"] == str(path) and info["schema_version"] == 3 and info["journal_mode"] == "wal"
    r.close()
    with KnowledgeGraph(path) as kg:  # reopen the file independently
        ents = kg.query_entities()
        assert [e["name"] for e in ents] == ["c0", "c1", "c2", "c3", "c4"]  # c5: created after serve time
        e0, e1 = ents[0], ents[1]
        # no family: a retriever never sees the generator's labels
        assert e0["properties"] == {"chunk_id": "c0", "doc_id": "pol", "version": 1, "source": "policy_doc"}
        assert (e0["base_confidence"], e0["decay_rate"], e0["valid_from"], e0["valid_until"]) == (0.9, 0.01, 0, 100)
        assert (e1["valid_from"], e1["valid_until"], e1["created_at"]) == (100.0, None, 90.0)
        _ids, mat = kg.vectors()
        np.testing.assert_allclose(mat, vectors[:5], atol=1e-7)
        name = {e["id"]: e["name"] for e in ents}
        deps = kg.dependencies()
        assert sorted(zip([name[s] for s in deps["source"]], [name[t] for t in deps["target"]],
                          deps["dep_type"].tolist(), deps["created_at"].tolist())) == [
            ("c1", "c0", "supersedes", 90.0), ("c2", "c0", "depends_on", 10.0), ("c3", "c2", "depends_on", 20.0)]
        # the ripple ran for c0 at its successor's valid_from (100): c2 hop 1 (0.15), c3 hop 2 (0.075)
        log = kg.confidence_log()
        assert [(name[r["entity_id"]], r["timestamp"], r["reason"]) for r in log] == [
            ("c2", 100.0, f"ripple from entity {e0['id']} at depth 1"),
            ("c3", 100.0, f"ripple from entity {e0['id']} at depth 2")]
        c2 = ents[2]["id"]
        assert kg.get_confidence(c2, 99.0) == pytest.approx(0.85 * math.exp(-0.01 * 89))
        assert kg.get_confidence(c2, 100.0) == pytest.approx(0.85 * math.exp(-0.01 * 90) - 0.15)
    with pytest.raises(BenchError, match=r"retrievers\.kg_smartvector\.db_path=.*file exists"):
        build_retriever("kg_smartvector", kg_cfg(db_path=str(path))).index(corpus, vectors, 130.0)


def test_retriever_four_signals_at_each_queries_as_of():
    corpus, vectors = tiny_corpus()
    r = build_retriever("kg_smartvector", kg_cfg(decay_rate=0.01))
    r.index(corpus, vectors, serve_time=130.0)
    q = np.array([[1, 0, 0], [1, 0, 0]], dtype=np.float32)
    as_of = np.array([130.0, 50.0])
    sig = r.signals(q, as_of)
    # temporal: the superseded c0 is 30 days past its valid_until at 130; c1 is 50 days before its start at 50
    assert sig["temporal"][0, 0] == pytest.approx(math.exp(-0.05 * 30)) and sig["temporal"][0, 0] < 1
    assert sig["temporal"][0, 1] == 1.0 and sig["temporal"][1, 0] == 1.0
    assert sig["temporal"][1, 1] == pytest.approx(math.exp(-0.05 * 50))
    # confidence at each as_of: c2 has the ripple penalty at 130, not at 50
    assert sig["confidence"][0, 2] == pytest.approx(0.85 * math.exp(-0.01 * 120) - 0.15)
    assert sig["confidence"][1, 2] == pytest.approx(0.85 * math.exp(-0.01 * 40))
    assert sig["confidence"][0, 4] == pytest.approx(0.3 * math.exp(-0.01 * 5))
    # graph importance: rows c2 -> c0, c3 -> c2 (the supersedes row excluded), c1 and c4 isolated: the chain
    # 3 -> 2 -> 0 of the closed-form test above with one more isolated node gives the same normalised values
    np.testing.assert_allclose(sig["relational"][0, :5], [1, 1 / 2.5725, 1.85 / 2.5725, 1 / 2.5725, 1 / 2.5725],
                               atol=1e-9)
    # as of 15 only c2 -> c0 exists (c3's row is created at 20)
    assert sig["relational"][0, 3] != pytest.approx(r.signals(q[:1], np.array([15.0]))["relational"][0, 3])
    # at 50: c1 (created 90) and c4 (125) are not candidates yet; c5 was never ingested
    assert sig["candidate"][1].tolist() == [True, False, True, True, False, False]
    assert sig["candidate"][0].tolist() == [True] * 5 + [False]
    assert np.isnan(sig["final"][:, 5]).all()
    # the final score is the weighted sum (default weights sum to 1)
    expected = (0.5 * np.clip(sig["semantic"], 0, 1) + 0.2 * sig["temporal"] + 0.2 * sig["confidence"]
                + 0.1 * sig["relational"])
    np.testing.assert_allclose(sig["final"][:, :5], expected[:, :5])

    run_ = r.search(q, as_of, k=6)
    assert run_.ranked[0, 0] == 1    # the current version, though c0's cosine is higher
    assert run_.ranked[1, 0] == 0    # as of 50, the version then in force
    assert 5 not in run_.ranked[0] and run_.ranked[1, 4:].tolist() == [-1, -1]
    np.testing.assert_allclose(run_.confidence, [sig["final"][0, 1], sig["final"][1, 0]])
    assert ((run_.confidence >= 0) & (run_.confidence <= 1)).all()
    # each query judged at its own as_of: batching does not matter
    alone = r.search(q[1:], as_of[1:], k=6)
    np.testing.assert_array_equal(alone.ranked[0], run_.ranked[1])


def test_retrieval_weights_are_settable():
    corpus, vectors = tiny_corpus()
    r = build_retriever("kg_smartvector", kg_cfg())
    r.index(corpus, vectors, serve_time=130.0)
    q = np.array([[1, 0, 0]], dtype=np.float32)
    assert r.search(q, np.array([130.0]), 3).ranked[0, 0] == 1
    r.set_retrieval_weights(1.0, 0.0, 0.0, 0.0)  # cosine alone: the superseded c0 wins (cos 1 vs 0.99)
    run_ = r.search(q, np.array([130.0]), 3)
    assert run_.ranked[0].tolist() == [0, 1, 4]
    assert run_.confidence[0] == pytest.approx(1.0)
    r.set_retrieval_weights(0.0, 2.0, 0.0, 0.0)  # temporal alone (normalised): ties go to the lower index
    run_ = r.search(q, np.array([130.0]), 5)
    assert run_.ranked[0].tolist() == [1, 2, 3, 4, 0] and run_.confidence[0] == 1.0
    with pytest.raises(BenchError, match=r"set_retrieval_weights\.temporal=-1: must be a finite number >= 0"):
        r.set_retrieval_weights(1, -1, 0, 0)


def test_search_reads_the_database_not_a_cache(tmp_path):
    """A write through another connection to the same file changes the next search."""
    corpus, vectors = tiny_corpus()
    path = tmp_path / "kg.sqlite"
    r = build_retriever("kg_smartvector", kg_cfg(db_path=str(path)))
    r.index(corpus, vectors, serve_time=130.0)
    q, t = np.array([[1, 0, 0]], dtype=np.float32), np.array([130.0])
    first = r.search(q, t, 3)
    assert first.ranked[0, 0] == 1
    with KnowledgeGraph(path) as other:
        c1 = other.query_entities(created_after=90.0, created_before=91.0)[0]["id"]
        other.update_confidence(c1, -1.0, at=129.0, reason="test")
        other.conn.execute("UPDATE kg_entities SET valid_until = 110 WHERE id = ?", (c1,))
    again = r.search(q, t, 3)
    assert again.ranked[0, 0] != 1 and again.scores[0, 0] < first.scores[0, 0]


def test_in_degree_mode_is_selectable_and_raises_the_superseded_version():
    corpus, vectors = tiny_corpus()
    r = build_retriever("kg_smartvector", kg_cfg(graph_importance="in_degree"))
    r.index(corpus, vectors, serve_time=130.0)
    g = r.signals(np.array([[1, 0, 0]], dtype=np.float32), np.array([130.0]))["relational"][0]
    # rows by target: c0 has c2's depends_on and c1's supersedes (2), c2 has 1
    np.testing.assert_allclose(g[:5], [1.0, 0.0, 0.5, 0.0, 0.0])


@pytest.mark.parametrize("overrides, message", [
    ({"colour": 1}, r"retrievers\.kg_smartvector\.colour: unknown key"),
    ({"decay_rate": -0.1}, r"retrievers\.kg_smartvector\.decay_rate=-0\.1: must be a finite number >= 0"),
    ({"ripple_penalty": -1}, r"retrievers\.kg_smartvector\.ripple_penalty=-1: must be a finite number >= 0"),
    ({"ripple_max_depth": 1.5}, r"retrievers\.kg_smartvector\.ripple_max_depth=1\.5: must be an integer >= 0"),
    ({"damping": 1.0}, r"retrievers\.kg_smartvector\.damping=1\.0: must be in \[0, 1\)"),
    ({"graph_importance": "hits"}, (r"retrievers\.kg_smartvector\.graph_importance=hits: unknown; allowed: "
                                   r"pagerank, in_degree")),
    ({"weights": {"semantic": -0.5}}, r"retrievers\.kg_smartvector\.weights\.semantic=-0\.5: must be a finite number >= 0"),
    ({"weights": {"lexical": 0.5}}, r"retrievers\.kg_smartvector\.weights\.lexical: unknown weight"),
    ({"db_path": 3}, r"retrievers\.kg_smartvector\.db_path=3: must be null"),
    ({"query_batch": 0}, r"retrievers\.kg_smartvector\.query_batch=0: must be an integer > 0"),
])
def test_config_is_validated(overrides, message):
    with pytest.raises(BenchError, match=message):
        build_retriever("kg_smartvector", kg_cfg(**overrides))


def test_config_defaults_are_the_specs():
    r = build_retriever("kg_smartvector", kg_cfg())
    w = r.weights
    assert (w.semantic, w.temporal, w.confidence, w.relational) == (0.5, 0.2, 0.2, 0.1)
    p = r.params
    assert (p.decay_rate, p.access_bonus, p.graph_importance, p.damping, p.ripple_penalty) == \
        (0.05, 0.1, "pagerank", 0.85, 0.15)
    assert r.db_path is None
    bare = build_retriever("kg_smartvector", {"_target_": KG_TARGET})  # no weights key: the spec's defaults
    assert bare.weights == w


def test_main_experiment_on_the_tiny_dataset(tmp_path):
    cfg = compose_config(TINY + ["embedder=hashing", "systems=[plain_cosine,kg_smartvector]"])
    assert cfg["retrievers"]["kg_smartvector"]["_target_"] == KG_TARGET
    metrics = run(cfg, tmp_path / "run")
    assert list(metrics["systems"]) == ["plain_cosine", "kg_smartvector"]
    n = metrics["dataset"]["n_queries"]
    for split in ("dev", "test"):
        m = metrics["systems"]["kg_smartvector"][split]
        for key in ("top1", "stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5"):
            assert 0.0 <= m[key] <= 1.0, (split, key)
        assert 0.0 <= m["mcnemar_p"] <= 1.0
        assert sum(m["ece_bins"]["counts"]) == m["n_queries"]
    info = metrics["system_info"]["kg_smartvector"]
    assert info["schema_version"] == 3 and info["journal_mode"] == "wal"
    assert info["counts"]["entities"] <= metrics["dataset"]["n_vectors"]
    assert info["counts"]["dependencies_supersedes"] > 0 and info["counts"]["ripple_rows"] > 0
    lines = (tmp_path / "run" / "run_kg_smartvector.jsonl").read_text().splitlines()
    assert len(lines) == n + 1
    assert "| kg_smartvector |" in (tmp_path / "run" / "table.md").read_text()
