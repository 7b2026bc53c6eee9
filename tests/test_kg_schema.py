"""kg_smartvector: the schema of the SmartVector spec for sqlite-knowledge-graph on a real SQLite file (the
v2 -> v3 migration, one transaction and idempotent, fresh and unknown versions, WAL mode)."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.kg_smartvector import schema
from smartvector_bench.systems.kg_smartvector.schema import create_v2, ensure_schema, user_version
from smartvector_bench.systems.kg_smartvector.store import KnowledgeGraph

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
