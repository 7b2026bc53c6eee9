"""The knowledge-graph database schema: the crate's schema v2 and the SmartVector migration to v3.

Schema v2 is what ``sqlite-knowledge-graph`` has before the SmartVector spec (seed 003): ``kg_entities``,
``kg_relations``, ``kg_vectors``. Schema v3 adds exactly the columns and tables the spec lists:

- ``kg_entities`` + ``confidence`` (1.0), ``access_count`` (0), ``last_accessed``, ``valid_from``,
  ``valid_until``, ``base_confidence`` (1.0), ``decay_rate`` (0.05)
- ``kg_relations`` + ``confidence``, ``valid_from``, ``valid_until``
- ``kg_dependencies (source_id, target_id, dep_type, created_at)``
- ``kg_confidence_log (entity_id, old_value, new_value, reason, timestamp)``

plus one table of our own, ``kg_feedback (entity_id, delta, kind, timestamp)``: the spec's confidence formula
needs a feedback sum but gives it no column; storing every adjustment (user feedback and ripple penalties)
with its time keeps the sum derived, never stale, and lets confidence be judged as of any time.

The version is ``PRAGMA user_version`` (0 = empty database, 2 = pre-spec, 3 = SmartVector). The migration
runs in one ``BEGIN IMMEDIATE`` transaction: it either completes (version 3) or leaves the v2 database
untouched. ``ensure_schema`` on a v3 database changes nothing; on an empty one it builds v3 directly (the v2
tables and the v3 additions in one transaction, never committed at v2).

Times are float days since the Unix epoch (the benchmark's simulated clock); the crate stores Unix seconds
(multiply by 86400). An open validity end is NULL.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from smartvector_bench.core.errors import BenchError

SCHEMA_VERSION = 3
DEPENDENCY_TYPES = ("depends_on", "depended_by", "supersedes", "contradicts")
FEEDBACK_KINDS = ("feedback", "ripple")

V2_TABLES = (
    """CREATE TABLE kg_entities (
        id INTEGER PRIMARY KEY,
        entity_type TEXT NOT NULL,
        name TEXT NOT NULL,
        properties TEXT NOT NULL DEFAULT '{}',
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL)""",
    """CREATE TABLE kg_relations (
        id INTEGER PRIMARY KEY,
        source_id INTEGER NOT NULL REFERENCES kg_entities(id),
        target_id INTEGER NOT NULL REFERENCES kg_entities(id),
        rel_type TEXT NOT NULL,
        weight REAL NOT NULL DEFAULT 1.0,
        properties TEXT NOT NULL DEFAULT '{}',
        created_at REAL NOT NULL)""",
    """CREATE TABLE kg_vectors (
        entity_id INTEGER PRIMARY KEY REFERENCES kg_entities(id),
        vector BLOB NOT NULL,
        dimension INTEGER NOT NULL)""",
    "CREATE INDEX idx_kg_relations_source ON kg_relations(source_id)",
    "CREATE INDEX idx_kg_relations_target ON kg_relations(target_id)",
)

# (column, declaration) added by the v3 migration; ADD COLUMN with a constant default fills existing rows.
V3_ENTITY_COLUMNS = (
    ("confidence", "REAL NOT NULL DEFAULT 1.0"),
    ("access_count", "INTEGER NOT NULL DEFAULT 0"),
    ("last_accessed", "REAL"),
    ("valid_from", "REAL"),
    ("valid_until", "REAL"),
    ("base_confidence", "REAL NOT NULL DEFAULT 1.0"),
    ("decay_rate", "REAL NOT NULL DEFAULT 0.05"),
)
V3_RELATION_COLUMNS = (
    ("confidence", "REAL NOT NULL DEFAULT 1.0"),
    ("valid_from", "REAL"),
    ("valid_until", "REAL"),
)
_types = ", ".join(f"'{t}'" for t in DEPENDENCY_TYPES)
_kinds = ", ".join(f"'{k}'" for k in FEEDBACK_KINDS)
V3_TABLES = (
    f"""CREATE TABLE IF NOT EXISTS kg_dependencies (
        id INTEGER PRIMARY KEY,
        source_id INTEGER NOT NULL REFERENCES kg_entities(id),
        target_id INTEGER NOT NULL REFERENCES kg_entities(id),
        dep_type TEXT NOT NULL CHECK (dep_type IN ({_types})),
        created_at REAL NOT NULL,
        UNIQUE (source_id, target_id, dep_type))""",
    """CREATE TABLE IF NOT EXISTS kg_confidence_log (
        id INTEGER PRIMARY KEY,
        entity_id INTEGER NOT NULL REFERENCES kg_entities(id),
        old_value REAL NOT NULL,
        new_value REAL NOT NULL,
        reason TEXT NOT NULL,
        timestamp REAL NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS kg_feedback (
        id INTEGER PRIMARY KEY,
        entity_id INTEGER NOT NULL REFERENCES kg_entities(id),
        delta REAL NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ({_kinds})),
        timestamp REAL NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS idx_kg_dependencies_target ON kg_dependencies(target_id, dep_type)",
    "CREATE INDEX IF NOT EXISTS idx_kg_dependencies_source ON kg_dependencies(source_id, dep_type)",
    "CREATE INDEX IF NOT EXISTS idx_kg_confidence_log_entity ON kg_confidence_log(entity_id, timestamp)",
    "CREATE INDEX IF NOT EXISTS idx_kg_feedback_entity ON kg_feedback(entity_id, timestamp)",
    "CREATE INDEX IF NOT EXISTS idx_kg_entities_created ON kg_entities(created_at)",
)

_savepoints = itertools.count()


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One atomic unit: ``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error), or a SAVEPOINT when the
    connection is already inside a transaction (so API calls nest inside a caller's bulk transaction)."""
    if conn.in_transaction:
        name = f"kg_sp{next(_savepoints)}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
    else:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _create_v2_tables(conn: sqlite3.Connection) -> None:
    for sql in V2_TABLES:
        conn.execute(sql)
    conn.execute("PRAGMA user_version = 2")


def create_v2(conn: sqlite3.Connection) -> None:
    """Build an empty schema-v2 database (the crate before the SmartVector spec), version 2."""
    if _tables(conn) & {"kg_entities", "kg_relations", "kg_vectors"}:
        raise BenchError("create_v2: the database already has knowledge-graph tables")
    with transaction(conn):
        _create_v2_tables(conn)


def _migrate_v2_to_v3(conn: sqlite3.Connection) -> None:
    for table, added in (("kg_entities", V3_ENTITY_COLUMNS), ("kg_relations", V3_RELATION_COLUMNS)):
        have = set(columns(conn, table))
        for name, decl in added:
            if name not in have:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")
    for sql in V3_TABLES:
        conn.execute(sql)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def set_wal(conn: sqlite3.Connection) -> str:
    """Switch to write-ahead logging (an in-memory database reports ``memory``); returns the journal mode."""
    if conn.in_transaction:
        raise BenchError("journal_mode: cannot switch to WAL inside an open transaction")
    return str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()


def ensure_schema(conn: sqlite3.Connection) -> int:
    """Bring the database to schema v3 and WAL mode; returns the version (3).

    empty -> v3 directly; v2 -> v3 by a non-destructive migration (every row and value kept, new columns
    filled with their defaults) in one transaction; v3 -> nothing. Any other version, or knowledge-graph
    tables without a version, is refused (nothing is changed)."""
    if not conn.in_transaction:
        set_wal(conn)
    version = user_version(conn)
    if version == SCHEMA_VERSION:
        return version
    if version > SCHEMA_VERSION:
        raise BenchError(f"schema version {version}: newer than this library supports ({SCHEMA_VERSION})")
    present = _tables(conn) & {"kg_entities", "kg_relations", "kg_vectors"}
    if version == 0 and present:
        raise BenchError(f"schema version 0 but tables {', '.join(sorted(present))} exist: "
                         "not a database this library created; allowed versions: 0 (empty), 2, 3")
    if version not in (0, 2):
        raise BenchError(f"schema version {version}: cannot migrate; allowed versions: 0 (empty), 2, 3")
    with transaction(conn):
        if version == 0:
            _create_v2_tables(conn)
        _migrate_v2_to_v3(conn)
    return SCHEMA_VERSION
