"""The living SmartVector store: columnar state per vector plus an append-only event log.

Everything that changes a vector's confidence or status goes through a method here, and every such change
is logged with its simulated time and its cause, so any vector's lineage can be rebuilt (``audit.lineage``).
Live confidence is never stored: it is a pure function of this state and a time (``live_confidence``).

Per-vector state is compact and exact (``compact.py``): every float64 column, including the store's own
copies of the corpus columns the score reads (authority, created_at, valid_from, valid_to), is kept as one-
or two-byte codes into the table of its distinct values and reads back bit for bit; ``status`` is int8 and
``superseded_by`` int32. ``nbytes_by_column()`` gives each column's resident bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.systems.smartvector.compact import Compact, ExactColumn, narrow_ids
from smartvector_bench.systems.smartvector.eventlog import ColumnLog
from smartvector_bench.systems.smartvector.lifecycle import Status
from smartvector_bench.systems.smartvector.signals.confidence import ConfidenceParams, live_confidence


@dataclass(frozen=True)
class StoreParams:
    """Lifecycle choices that are not confidence-formula constants."""

    validation_resets_decay: bool = True  # a confirmation restarts the Ebbinghaus clock (the reference ignores it)
    lift_penalties_on_validation: bool = False  # ripple penalties are permanent (reference) or lifted
    archive_after_days: float = 30.0  # DEPRECATED -> ARCHIVED this long after supersession
    POSITIVE: ClassVar[tuple[str, ...]] = ()


@dataclass
class VectorStore:
    corpus: Corpus
    conf: ConfidenceParams = field(default_factory=ConfidenceParams)
    params: StoreParams = field(default_factory=StoreParams)

    # Exact compact float64 columns (assigning an array encodes it). The first four are the corpus's values,
    # held here so that the search reads compact columns only.
    authority = Compact()
    created_at = Compact()
    valid_from = Compact()
    valid_to = Compact()
    ingested_at = Compact()
    positive = Compact()
    negative = Compact()
    access = Compact()
    last_validated = Compact()
    penalty = Compact()  # sum of active (not lifted) ripple reductions of base confidence
    deprecated_at = Compact()
    archived_at = Compact()
    COLUMNS: ClassVar[tuple[str, ...]] = (
        "authority", "created_at", "valid_from", "valid_to", "ingested_at", "positive", "negative", "access",
        "last_validated", "penalty", "deprecated_at", "archived_at", "status", "superseded_by")

    def __post_init__(self) -> None:
        c = self.corpus
        n = len(c)
        self.authority, self.created_at = c.authority, c.created_at
        self.valid_from, self.valid_to = c.valid_from, c.valid_to
        self.ingested_at = np.full(n, np.inf)
        self.status = np.full(n, -1, dtype=np.int8)  # -1: not ingested yet
        self.positive = np.zeros(n)
        self.negative = np.zeros(n)
        self.access = np.zeros(n)
        self.last_validated = np.full(n, -np.inf)
        self.penalty = np.zeros(n)
        self.deprecated_at = np.full(n, np.inf)
        self.archived_at = np.full(n, np.inf)
        self.superseded_by = narrow_ids(c.superseded_by(), n)
        self.events = ColumnLog()  # list-like; bulk writers add columnar batches (eventlog.py)
        self.penalties = ColumnLog(nullable=("lifted_at",))  # ledger: vector, origin, depth, applied, time, lifted_at
        self.pending: set[int] = set()  # changed since the last consolidation run

    # -- derived state -----------------------------------------------------------------------------------------
    def nbytes_by_column(self) -> dict[str, int]:
        """Resident bytes of each per-vector column (codes and table of a compact one)."""
        return {name: int(getattr(self, name).nbytes) for name in self.COLUMNS}

    @property
    def base_confidence(self) -> np.ndarray:
        """Source authority minus the active ripple penalties."""
        return self.authority - self.penalty

    def decay_from(self, rows=slice(None)) -> np.ndarray:
        if self.params.validation_resets_decay:
            return np.maximum(self.created_at[rows], self.last_validated[rows])
        return self.created_at[rows]

    def live_confidence(self, as_of: np.ndarray) -> np.ndarray:
        """C(v, t) for every vector, (Q, N)."""
        return live_confidence(self.base_confidence, self.decay_from(), np.asarray(as_of, dtype=np.float64),
                               self.positive.values(), self.negative.values(), self.access.values(), self.conf)

    def confidence_at(self, i: int, t: float) -> float:
        r = slice(i, i + 1)
        c = live_confidence(self.authority[r] - self.penalty[r], self.decay_from(r), np.array([t]),
                            self.positive[r], self.negative[r], self.access[r], self.conf)
        return float(c[0, 0])

    def ingested(self, t: float | None = None) -> np.ndarray:
        return self.status >= 0 if t is None else self.ingested_at <= t

    def in_force(self) -> np.ndarray:
        """Ingested, not superseded, not archived."""
        return (self.status >= 0) & (self.status != Status.DEPRECATED) & (self.status != Status.ARCHIVED)

    def feedback_ratio(self, rows: np.ndarray | None = None) -> np.ndarray:
        """positive / (positive + negative) feedback per vector (0.5 without feedback); of ``rows`` only if given."""
        positive = self.positive.values() if rows is None else self.positive[rows]
        total = positive + (self.negative.values() if rows is None else self.negative[rows])
        return np.where(total > 0, positive / np.where(total > 0, total, 1), 0.5)

    # -- logging -----------------------------------------------------------------------------------------------
    def log(self, t: float, kind: str, vector: int, cause: str | int | None, **detail) -> None:
        self.events.append({"time": float(t), "kind": kind, "vector": int(vector),
                            "cause": cause if not isinstance(cause, (np.integer,)) else int(cause), **detail})

    def _confidence_change(self, i: int, t: float, kind: str, cause, mutate, **detail) -> None:
        before = self.confidence_at(i, t)
        mutate()
        self.log(t, kind, i, cause, confidence_before=round(before, 6),
                 confidence_after=round(self.confidence_at(i, t), 6), **detail)

    def set_statuses(self, rows: np.ndarray, status: Status, t: float, cause: str) -> None:
        """``set_status`` for each of ``rows`` in order (one columnar batch of events)."""
        rows = np.asarray(rows, dtype=np.int64)
        old = self.status[rows]
        rows = rows[old != status]
        if not len(rows):
            return
        old = self.status[rows]
        self.status[rows] = status
        names = {s.value: s.name for s in Status}
        self.events.add_columns(len(rows), time=float(t), kind="status", vector=rows, cause=cause,
                                old=[None if o < 0 else names[o] for o in old.tolist()], new=Status(status).name)

    def set_status(self, i: int, status: Status, t: float, cause: str) -> None:
        old = int(self.status[i])
        if old == status:
            return
        self.status[i] = status
        self.log(t, "status", i, cause, old=None if old < 0 else Status(old).name, new=Status(status).name)

    # -- state changes -----------------------------------------------------------------------------------------
    def ingest(self, i: int, t: float) -> None:
        self.ingested_at[i] = t
        self.set_status(i, Status.UNCONSOLIDATED, t, "ingested")
        self.pending.add(int(i))

    def supersede(self, old: int, new: int, t: float) -> None:
        """``new`` takes effect at ``t``: ``old`` is DEPRECATED (kept, searchable for earlier as-of times)."""
        self.deprecated_at[old] = t
        self.set_status(old, Status.DEPRECATED, t, f"superseded by {self.corpus.ids[new]}")
        self.pending.add(int(old))

    def archive(self, i: int, t: float) -> None:
        self.archived_at[i] = t
        self.set_status(i, Status.ARCHIVED, t, "deprecated for archive_after_days")

    def archive_rows(self, rows: np.ndarray, t: float) -> None:
        """``archive`` of each of ``rows`` in order, as one columnar batch of events."""
        rows = np.asarray(rows, dtype=np.int64)
        self.archived_at[rows] = t
        self.set_statuses(rows, Status.ARCHIVED, t, "deprecated for archive_after_days")

    def record_access(self, i: int, t: float) -> None:
        """A retrieval is a recall event (capped logarithmic reinforcement)."""
        self._confidence_change(i, t, "access", "retrieved", lambda: self.access.__setitem__(i, self.access[i] + 1))

    def feedback(self, i: int, accepted: bool, t: float, cause: str = "user") -> None:
        """Reconsolidation: an acceptance adds ``positive_boost``, a correction removes ``negative_penalty``."""
        arr = self.positive if accepted else self.negative
        self._confidence_change(i, t, "feedback", cause, lambda: arr.__setitem__(i, arr[i] + 1),
                                accepted=bool(accepted))

    def validate(self, i: int, t: float, cause: str = "user confirmed") -> None:
        """A confirmation: restarts the decay clock, may lift ripple penalties, revives a DORMANT vector."""
        def mutate() -> None:
            self.last_validated[i] = t
            if self.params.lift_penalties_on_validation:
                for entry in self.penalties.lift("lifted_at", {"vector": i}, t):
                    self.penalty[i] -= entry["applied"]
        self._confidence_change(i, t, "validation", cause, mutate)
        if self.status[i] == Status.DORMANT and self.confidence_at(i, t) >= self.conf.dormant_threshold:
            self.set_status(i, Status.ACTIVE, t, "revived: confirmed")

    def penalize(self, i: int, amount: float, origin: int, depth: int, t: float, floor: float) -> None:
        """A ripple penalty on base confidence, never below ``floor`` and never raising it; logged with origin."""
        base = self.authority[i] - self.penalty[i]
        applied = float(base - max(floor, base - amount)) if base > floor else 0.0
        def mutate() -> None:
            self.penalty[i] += applied
        self._confidence_change(i, t, "ripple", int(origin), mutate, depth=depth, penalty=amount,
                                applied=round(applied, 6))
        self.penalties.append({"vector": int(i), "origin": int(origin), "depth": depth, "applied": applied,
                               "time": float(t), "lifted_at": None})


def ingest_until(store: VectorStore, at: float, since: float = -np.inf) -> None:
    """Ingest vectors created in (since, at] and apply supersessions taking effect then, in time order
    (ingest before supersede at one time, then by row): as ``store.ingest`` / ``store.supersede`` one event at
    a time would, in one columnar batch (a row's old status is its previous event's new one)."""
    c = store.corpus
    ing = np.nonzero((c.created_at > since) & (c.created_at <= at))[0]
    succ = np.asarray(store.superseded_by, dtype=np.int64)
    old = np.nonzero(succ >= 0)[0]
    t_old = np.asarray(c.valid_from, dtype=np.float64)[succ[old]]
    old, t_old = old[(since < t_old) & (t_old <= at)], t_old[(since < t_old) & (t_old <= at)]
    rows = np.concatenate([ing, old]).astype(np.int64)
    times = np.concatenate([np.asarray(c.created_at, dtype=np.float64)[ing], t_old])
    kind = np.r_[np.zeros(len(ing), np.int8), np.ones(len(old), np.int8)]
    order = np.lexsort((rows, kind, times))
    rows, times, kind = rows[order], times[order], kind[order]
    if not len(rows):
        return
    store.ingested_at[ing] = np.asarray(c.created_at, dtype=np.float64)[ing]
    store.deprecated_at[old] = t_old
    new = np.where(kind == 0, Status.UNCONSOLIDATED, Status.DEPRECATED).astype(np.int8)
    by_row = np.lexsort((np.arange(len(rows)), rows))  # each row's events in time order
    prev = store.status[rows].astype(np.int8)  # a row's first event starts from its status now
    later = np.r_[False, rows[by_row][1:] == rows[by_row][:-1]]
    q = np.nonzero(later)[0]
    prev[by_row[q]] = new[by_row[q - 1]]
    changed = prev != new
    last = np.r_[rows[by_row][1:] != rows[by_row][:-1], True]
    store.status[rows[by_row][last]] = new[by_row][last]
    store.pending.update(rows.tolist())
    names = np.array([None] + [s.name for s in Status], dtype=object)  # -1 (not ingested) -> None
    m = changed
    cause = ["ingested" if k == 0 else f"superseded by {c.ids[j]}"
             for k, j in zip(kind[m].tolist(), succ[rows[m]].tolist())]
    store.events.add_columns(int(m.sum()), time=times[m], kind="status", vector=rows[m], cause=cause,
                             old=list(names[prev[m].astype(np.int64) + 1]),
                             new=list(names[new[m].astype(np.int64) + 1]))
