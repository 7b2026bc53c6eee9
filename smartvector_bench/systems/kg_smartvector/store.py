"""``KnowledgeGraph``: the SmartVector spec (seed 003) on a real SQLite file, with the crate's faults fixed.

All state lives in the database (schema v3, WAL mode; see :mod:`.schema`). The object holds only the
connection and its parameters (``access_bonus``, ``default_decay_rate``, ``ripple_penalty``,
``ripple_max_depth``); every read goes to SQLite, so another connection's writes are seen on the next call.
The one stored value that can go stale is the ``kg_entities.confidence`` column: a snapshot of the live
confidence written at the entity's last confidence event (insert, access, feedback, ripple), for readers
of the file; it does not decay by itself, and nothing here (retrieval included) reads it: live confidence
is always recomputed from the columns and ``kg_feedback``.

Times are the caller's simulated time in float days since the Unix epoch, never the wall clock.

Live confidence of an entity at time t (the spec's formula, with the fix)::

    C(t) = clamp( base * exp(-lambda * days) + access_bonus * ln(1 + access_count)
                  + clamp(feedback_sum(t), -1, 1),  0, 1)

``base`` = ``base_confidence``, ``lambda`` = ``decay_rate`` (per entity), ``days`` = max(0, t -
created_at), ``feedback_sum(t)`` = the sum of the ``kg_feedback`` deltas (user feedback and ripple
penalties) timestamped at or before t. The crate (v0.13) leaves the result unclamped (it can exceed 1 or go
below 0); here it is clamped to [0, 1]. ``access_count`` is the current counter (accesses are not
timestamped individually), so it counts at every t; the crate never increments it, ``access_entity`` here
does.

Differences from the crate, on purpose: ``access_entity`` increments ``access_count`` and sets
``last_accessed``; ``query_entities`` has ``created_after`` / ``created_before``; confidence is clamped;
ripple penalties are written to ``kg_feedback``, which the confidence formula (and so retrieval) reads,
instead of a column retrieval ignores.

Why this module is long: the spec is one object over one SQLite connection (entities, dependencies, feedback,
ripple), and every method reads the database, so splitting it would only scatter the SQL of one schema.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections import deque
from pathlib import Path
from typing import Self

import numpy as np

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.kg_smartvector.pagerank import MODES, graph_importance
from smartvector_bench.systems.kg_smartvector.schema import (
    DEPENDENCY_TYPES, ensure_schema, set_wal, transaction, user_version,
)

DEFAULT_RIPPLE_PENALTY = 0.15  # at hop 1; halved per hop (0.075 at hop 2): the reference's first-hop value


def confidence_formula(base: np.ndarray, decay_rate: np.ndarray, days: np.ndarray, access_count: np.ndarray,
                       feedback_sum: np.ndarray, access_bonus: float = 0.1) -> np.ndarray:
    """C = clamp(base * exp(-decay_rate * days) + access_bonus * ln(1 + access_count)
    + clamp(feedback_sum, -1, 1), 0, 1), element-wise with broadcasting. ``days`` is clamped at 0.

    The spec's formula; sqlite-knowledge-graph v0.13 does not apply the outer clamp (its confidence can
    leave [0, 1]). The feedback sum is clamped before it is added, as the spec says."""
    days = np.maximum(np.asarray(days, dtype=np.float64), 0.0)
    raw = (np.asarray(base, dtype=np.float64) * np.exp(-np.asarray(decay_rate, dtype=np.float64) * days)
           + access_bonus * np.log1p(np.asarray(access_count, dtype=np.float64))
           + np.clip(np.asarray(feedback_sum, dtype=np.float64), -1.0, 1.0))
    return np.clip(raw, 0.0, 1.0)


def _finite(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) \
            or not math.isfinite(float(value)):
        raise BenchError(f"{what}={value!r}: must be a finite number")
    return float(value)


def _time_or_null(value, what: str) -> float | None:
    """A validity bound: None or +/-inf means open (stored as NULL)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) \
            or math.isnan(float(value)):
        raise BenchError(f"{what}={value!r}: must be a number (days since the epoch) or None")
    return None if math.isinf(float(value)) else float(value)


class KnowledgeGraph:
    """A SmartVector knowledge graph in the SQLite file ``path`` (created, or migrated to v3, on open)."""

    def __init__(self, path: str | Path, access_bonus: float = 0.1, default_decay_rate: float = 0.05,
                 ripple_penalty: float = DEFAULT_RIPPLE_PENALTY, ripple_max_depth: int = 2):
        for name, value in (("access_bonus", access_bonus), ("default_decay_rate", default_decay_rate),
                            ("ripple_penalty", ripple_penalty)):
            if _finite(value, name) < 0:
                raise BenchError(f"{name}={value}: must be >= 0")
        if isinstance(ripple_max_depth, bool) or not isinstance(ripple_max_depth, int) or ripple_max_depth < 0:
            raise BenchError(f"ripple_max_depth={ripple_max_depth!r}: must be an integer >= 0")
        self.path = str(path)
        self.access_bonus = float(access_bonus)
        self.default_decay_rate = float(default_decay_rate)
        self.ripple_penalty = float(ripple_penalty)
        self.ripple_max_depth = ripple_max_depth
        # Autocommit mode: every transaction is explicit (schema.transaction), none is opened implicitly.
        self.conn = sqlite3.connect(self.path, isolation_level=None)
        self.conn.execute("PRAGMA foreign_keys = ON")
        set_wal(self.conn)
        self.conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: durable across crashes of the app
        ensure_schema(self.conn)

    # -- plumbing ------------------------------------------------------------------------------------------
    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def transaction(self):
        """Group several calls into one atomic transaction (each call alone is atomic too)."""
        return transaction(self.conn)

    def journal_mode(self) -> str:
        return str(self.conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()

    def schema_version(self) -> int:
        return user_version(self.conn)

    def _require(self, entity_id: int) -> None:
        if self.conn.execute("SELECT 1 FROM kg_entities WHERE id = ?", (int(entity_id),)).fetchone() is None:
            raise BenchError(f"entity {entity_id}: no such entity")

    # -- entities ------------------------------------------------------------------------------------------
    def insert_entity(self, entity_type: str, name: str, properties: dict | None = None, *, at: float,
                      base_confidence: float = 1.0, decay_rate: float | None = None,
                      valid_from: float | None = None, valid_until: float | None = None) -> int:
        """Insert an entity created at the simulated time ``at`` (``created_at`` = ``updated_at`` = at);
        ``access_count`` 0, ``confidence`` = its live confidence then (1.0 with the default base).
        ``valid_from`` / ``valid_until`` None (or -inf / +inf) leave that end of the window open."""
        at = _finite(at, "at")
        base = _finite(base_confidence, "base_confidence")
        if not 0.0 <= base <= 1.0:
            raise BenchError(f"base_confidence={base}: must be in [0, 1]")
        rate = self.default_decay_rate if decay_rate is None else _finite(decay_rate, "decay_rate")
        if rate < 0:
            raise BenchError(f"decay_rate={rate}: must be >= 0")
        vf = _time_or_null(valid_from, "valid_from")
        vu = _time_or_null(valid_until, "valid_until")
        if vf is not None and vu is not None and vu <= vf:
            raise BenchError(f"valid_until={vu} must be after valid_from={vf}")
        snapshot = float(confidence_formula(base, rate, 0.0, 0, 0.0, self.access_bonus))
        with self.transaction():
            cur = self.conn.execute(
                "INSERT INTO kg_entities (entity_type, name, properties, created_at, updated_at, confidence, "
                "access_count, valid_from, valid_until, base_confidence, decay_rate) "
                "VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)",
                (entity_type, name, json.dumps(properties or {}, sort_keys=True), at, at, snapshot, vf, vu,
                 base, rate))
        return int(cur.lastrowid)

    def get_entity(self, entity_id: int) -> dict:
        rows = self._select("WHERE id = ?", (int(entity_id),))
        if not rows:
            raise BenchError(f"entity {entity_id}: no such entity")
        return rows[0]

    def _select(self, where: str = "", params: tuple = ()) -> list[dict]:
        cur = self.conn.execute(f"SELECT * FROM kg_entities {where} ORDER BY id", params)
        names = [d[0] for d in cur.description]
        out = []
        for row in cur.fetchall():
            rec = dict(zip(names, row))
            rec["properties"] = json.loads(rec["properties"])
            out.append(rec)
        return out

    def query_entities(self, entity_type: str | None = None, created_after: float | None = None,
                       created_before: float | None = None, limit: int | None = None) -> list[dict]:
        """Entities (dicts of every column, ``properties`` parsed), by id. The time filters form the
        half-open window ``created_after <= created_at < created_before`` (either end optional), so adjacent
        windows partition the entities: none is counted twice or lost at a boundary."""
        clauses, params = [], []
        if entity_type is not None:
            clauses.append("entity_type = ?")
            params.append(entity_type)
        if created_after is not None:
            clauses.append("created_at >= ?")
            params.append(_finite(created_after, "created_after"))
        if created_before is not None:
            clauses.append("created_at < ?")
            params.append(_finite(created_before, "created_before"))
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
                raise BenchError(f"limit={limit!r}: must be an integer >= 0")
            where += f" ORDER BY id LIMIT {limit}"
            cur = self.conn.execute(f"SELECT id FROM kg_entities {where}", params)
            ids = [r[0] for r in cur.fetchall()]
            return [self.get_entity(i) for i in ids]
        return self._select(where, tuple(params))

    def set_vector(self, entity_id: int, vector: np.ndarray) -> None:
        """Store the entity's embedding as a little-endian float32 BLOB (replacing any previous one)."""
        v = np.asarray(vector, dtype="<f4")
        if v.ndim != 1 or not len(v) or not np.isfinite(v).all():
            raise BenchError(f"entity {entity_id}: a vector must be a non-empty finite 1-D array")
        with self.transaction():
            self._require(entity_id)
            self.conn.execute("INSERT OR REPLACE INTO kg_vectors (entity_id, vector, dimension) VALUES (?, ?, ?)",
                              (int(entity_id), v.tobytes(), len(v)))

    def vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """(entity ids, (N, dim) float32 matrix) of every stored vector, by entity id."""
        rows = self.conn.execute("SELECT entity_id, vector, dimension FROM kg_vectors ORDER BY entity_id").fetchall()
        if not rows:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        dims = {r[2] for r in rows}
        if len(dims) != 1:
            raise BenchError(f"kg_vectors: mixed dimensions {sorted(dims)}")
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        mat = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), dims.pop())
        return ids, mat.astype(np.float32)

    def access_entity(self, entity_id: int, at: float) -> float:
        """Record an access at ``at``: ``access_count`` + 1, ``last_accessed`` = at (the crate forgot both);
        the confidence change (access reinforcement) is logged. Returns the new live confidence."""
        at = _finite(at, "at")
        with self.transaction():
            self._require(entity_id)
            old = self.get_confidence(entity_id, at)
            self.conn.execute("UPDATE kg_entities SET access_count = access_count + 1, last_accessed = ? "
                              "WHERE id = ?", (at, int(entity_id)))
            new = self.get_confidence(entity_id, at)
            self._log(entity_id, old, new, "access", at)
        return new

    # -- confidence ----------------------------------------------------------------------------------------
    def entity_columns(self) -> dict[str, np.ndarray]:
        """Every entity's numeric SmartVector columns as arrays, by id (open validity ends as -inf / +inf)."""
        rows = self.conn.execute(
            "SELECT id, created_at, base_confidence, decay_rate, access_count, valid_from, valid_until "
            "FROM kg_entities ORDER BY id").fetchall()
        a = np.array(rows, dtype=np.float64).reshape(len(rows), 7)  # NULL -> nan
        return {"id": a[:, 0].astype(np.int64), "created_at": a[:, 1], "base_confidence": a[:, 2],
                "decay_rate": a[:, 3], "access_count": a[:, 4],
                "valid_from": np.where(np.isnan(a[:, 5]), -np.inf, a[:, 5]),
                "valid_until": np.where(np.isnan(a[:, 6]), np.inf, a[:, 6])}

    def _feedback_sums(self, ids: np.ndarray, as_of: np.ndarray) -> np.ndarray:
        """(Q, N): per query time, each entity's (``ids``, sorted) feedback + ripple deltas timestamped at or
        before it."""
        rows = self.conn.execute("SELECT entity_id, delta, timestamp FROM kg_feedback").fetchall()
        out = np.zeros((len(as_of), len(ids)))
        if not rows:
            return out
        ev = np.array(rows, dtype=np.float64)
        eid = ev[:, 0].astype(np.int64)
        col = np.minimum(np.searchsorted(ids, eid), max(len(ids) - 1, 0))
        known = (col < len(ids)) & (ids[col] == eid) if len(ids) else np.zeros(len(eid), dtype=bool)
        ev, col = ev[known], col[known]  # events of entities outside ``ids`` (a subset was asked for)
        uniq, inverse = np.unique(as_of, return_inverse=True)
        per = np.stack([np.bincount(col, weights=np.where(ev[:, 2] <= u, ev[:, 1], 0.0), minlength=len(ids))
                        for u in uniq])
        return per[inverse]

    def confidence_matrix(self, as_of: np.ndarray, cols: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """(Q, N) live confidence at each time in ``as_of`` of every entity (by id), or of the entities in
        ``cols`` (a subset of :meth:`entity_columns`, still sorted by id), vectorised."""
        cols = self.entity_columns() if cols is None else cols
        t = np.atleast_1d(np.asarray(as_of, dtype=np.float64))
        days = t[:, None] - cols["created_at"][None, :]
        fb = self._feedback_sums(cols["id"], t)
        return confidence_formula(cols["base_confidence"][None, :], cols["decay_rate"][None, :], days,
                                  cols["access_count"][None, :], fb, self.access_bonus)

    def confidences(self, at: float) -> tuple[np.ndarray, np.ndarray]:
        """(entity ids, live confidence of each at ``at``)."""
        cols = self.entity_columns()
        return cols["id"], self.confidence_matrix(np.array([_finite(at, "at")]), cols)[0]

    def get_confidence(self, entity_id: int, at: float) -> float:
        """Live confidence of one entity at ``at`` (one row and its indexed feedback rows: O(1) in N)."""
        at = _finite(at, "at")
        row = self.conn.execute("SELECT created_at, base_confidence, decay_rate, access_count FROM kg_entities "
                                "WHERE id = ?", (int(entity_id),)).fetchone()
        if row is None:
            raise BenchError(f"entity {entity_id}: no such entity")
        created, base, rate, accesses = row
        return float(confidence_formula(base, rate, at - created, accesses, self.feedback_sum(entity_id, at),
                                        self.access_bonus))

    def feedback_sum(self, entity_id: int, at: float) -> float:
        """The raw (unclamped) sum of the entity's feedback and ripple deltas up to ``at``."""
        row = self.conn.execute("SELECT COALESCE(SUM(delta), 0) FROM kg_feedback WHERE entity_id = ? "
                                "AND timestamp <= ?", (int(entity_id), float(at))).fetchone()
        return float(row[0])

    def _log(self, entity_id: int, old: float, new: float, reason: str, at: float) -> None:
        self.conn.execute("INSERT INTO kg_confidence_log (entity_id, old_value, new_value, reason, timestamp) "
                          "VALUES (?, ?, ?, ?, ?)", (int(entity_id), old, new, reason, at))
        self.conn.execute("UPDATE kg_entities SET confidence = ?, updated_at = MAX(updated_at, ?) WHERE id = ?",
                          (new, at, int(entity_id)))

    def _adjust(self, entity_id: int, delta: float, kind: str, at: float, reason: str) -> tuple[float, float]:
        old = self.get_confidence(entity_id, at)
        self.conn.execute("INSERT INTO kg_feedback (entity_id, delta, kind, timestamp) VALUES (?, ?, ?, ?)",
                          (int(entity_id), delta, kind, at))
        new = self.get_confidence(entity_id, at)
        self._log(entity_id, old, new, reason, at)
        return old, new

    def update_confidence(self, entity_id: int, feedback: float, at: float,
                          reason: str = "feedback") -> tuple[float, float]:
        """Add ``feedback`` (signed) to the entity's feedback sum at ``at`` and log the change in
        ``kg_confidence_log`` (old and new live confidence at ``at``). Returns (old, new)."""
        feedback = _finite(feedback, "feedback")
        at = _finite(at, "at")
        with self.transaction():
            self._require(entity_id)
            return self._adjust(entity_id, feedback, "feedback", at, reason)

    def confidence_log(self, entity_id: int | None = None) -> list[dict]:
        sql = "SELECT entity_id, old_value, new_value, reason, timestamp FROM kg_confidence_log"
        params: tuple = ()
        if entity_id is not None:
            sql += " WHERE entity_id = ?"
            params = (int(entity_id),)
        cur = self.conn.execute(sql + " ORDER BY id", params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    # -- dependencies and ripple ---------------------------------------------------------------------------
    def add_dependency(self, source_id: int, target_id: int, dep_type: str, at: float) -> int:
        """Record "source <dep_type> target" at ``at``: ``depends_on`` (source requires target),
        ``depended_by`` (target requires source), ``supersedes`` (source replaces target), ``contradicts``.
        Adding the same (source, target, type) again keeps the first row; returns its id."""
        if dep_type not in DEPENDENCY_TYPES:
            raise BenchError(f"dep_type={dep_type!r}: unknown; allowed: {', '.join(DEPENDENCY_TYPES)}")
        if int(source_id) == int(target_id):
            raise BenchError(f"add_dependency: entity {source_id} cannot {dep_type} itself")
        at = _finite(at, "at")
        with self.transaction():
            self._require(source_id)
            self._require(target_id)
            self.conn.execute("INSERT OR IGNORE INTO kg_dependencies (source_id, target_id, dep_type, created_at) "
                              "VALUES (?, ?, ?, ?)", (int(source_id), int(target_id), dep_type, at))
            row = self.conn.execute("SELECT id FROM kg_dependencies WHERE source_id = ? AND target_id = ? AND "
                                    "dep_type = ?", (int(source_id), int(target_id), dep_type)).fetchone()
        return int(row[0])

    def dependencies(self, at: float | None = None) -> dict[str, np.ndarray]:
        """Every dependency row (created at or before ``at`` if given), by row id."""
        sql = "SELECT source_id, target_id, dep_type, created_at FROM kg_dependencies"
        params: tuple = ()
        if at is not None:
            sql += " WHERE created_at <= ?"
            params = (float(at),)
        rows = self.conn.execute(sql + " ORDER BY id", params).fetchall()
        return {"source": np.array([r[0] for r in rows], dtype=np.int64),
                "target": np.array([r[1] for r in rows], dtype=np.int64),
                "dep_type": np.array([r[2] for r in rows], dtype=object),
                "created_at": np.array([r[3] for r in rows], dtype=np.float64)}

    def dependants(self, entity_id: int, at: float | None = None) -> list[int]:
        """Entities that rely on ``entity_id``: "D depends_on X" or "X depended_by D" (created by ``at``)."""
        limit = math.inf if at is None else float(at)
        rows = self.conn.execute(
            "SELECT source_id FROM kg_dependencies WHERE target_id = ? AND dep_type = 'depends_on' AND created_at <= ? "
            "UNION SELECT target_id FROM kg_dependencies WHERE source_id = ? AND dep_type = 'depended_by' "
            "AND created_at <= ?", (int(entity_id), limit, int(entity_id), limit)).fetchall()
        return sorted(r[0] for r in rows)

    def ripple(self, changed_id: int, at: float, penalty: float | None = None, max_depth: int | None = None,
               ) -> list[tuple[int, int, float]]:
        """``changed_id`` was updated or marked stale at ``at``: every entity relying on it, directly (hop 1)
        or through one more dependant (hop 2, up to ``max_depth``), gets a confidence penalty of
        ``penalty * 0.5 ** (hop - 1)`` (default 0.15 then 0.075), once, at its shortest hop; the changed
        entity itself is never penalised (cycles end there). Each penalty is a ``ripple`` row in
        ``kg_feedback`` timestamped ``at`` (so the confidence formula and retrieval read it, from ``at`` on)
        and a ``kg_confidence_log`` row. Only dependency rows created by ``at`` are followed.
        Returns [(entity id, hop, penalty)] in BFS order."""
        penalty = self.ripple_penalty if penalty is None else _finite(penalty, "penalty")
        if penalty < 0:
            raise BenchError(f"penalty={penalty}: must be >= 0")
        depth_limit = self.ripple_max_depth if max_depth is None else int(max_depth)
        at = _finite(at, "at")
        hits: list[tuple[int, int, float]] = []
        with self.transaction():
            self._require(changed_id)
            seen = {int(changed_id)}
            queue = deque([(int(changed_id), 0)])
            while queue:
                node, depth = queue.popleft()
                if depth >= depth_limit:
                    continue
                for dep in self.dependants(node, at):
                    if dep in seen:
                        continue
                    seen.add(dep)
                    hop = depth + 1
                    amount = penalty * 0.5 ** (hop - 1)
                    self._adjust(dep, -amount, "ripple", at, f"ripple from entity {changed_id} at depth {hop}")
                    hits.append((dep, hop, amount))
                    queue.append((dep, hop))
        return hits

    def graph_importance(self, mode: str = "pagerank", damping: float = 0.85,
                         at: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(entity ids, importance in [0, 1]) over the dependency rows created by ``at`` (all if None);
        ``mode`` pagerank | in_degree (see :mod:`.pagerank`)."""
        if mode not in MODES:
            raise BenchError(f"graph_importance={mode}: unknown; allowed: {', '.join(MODES)}")
        ids = np.array([r[0] for r in self.conn.execute("SELECT id FROM kg_entities ORDER BY id")],
                       dtype=np.int64)
        deps = self.dependencies(at)
        return ids, graph_importance(len(ids), np.searchsorted(ids, deps["source"]),
                                     np.searchsorted(ids, deps["target"]), deps["dep_type"], mode, damping)

    def counts(self) -> dict[str, int]:
        one = lambda sql: int(self.conn.execute(sql).fetchone()[0])
        out = {"entities": one("SELECT COUNT(*) FROM kg_entities"),
               "vectors": one("SELECT COUNT(*) FROM kg_vectors"),
               "relations": one("SELECT COUNT(*) FROM kg_relations"),
               "confidence_log": one("SELECT COUNT(*) FROM kg_confidence_log"),
               "feedback_rows": one("SELECT COUNT(*) FROM kg_feedback WHERE kind = 'feedback'"),
               "ripple_rows": one("SELECT COUNT(*) FROM kg_feedback WHERE kind = 'ripple'")}
        for t in DEPENDENCY_TYPES:
            out[f"dependencies_{t}"] = int(self.conn.execute(
                "SELECT COUNT(*) FROM kg_dependencies WHERE dep_type = ?", (t,)).fetchone()[0])
        return out
