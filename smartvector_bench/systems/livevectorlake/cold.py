"""LiveVectorLake's cold tier: the full history of every paragraph, in one Delta Lake table on disk.

Columns (exactly these, in this order):

==============  =====================  ===========================================================================
chunk_id        string                 SHA-256 hex of the normalised paragraph text (``updates.chunk_hash``)
doc_id          string                 the document; hashes are scoped per document (see *row key* below)
position        int64                  paragraph index in the document version that created the row
text            string                 the paragraph as ingested
embedding       list<float32>          its vector (L2-normalised by the embedder)
valid_from      timestamp[us, UTC]     effective time of the document version that created the row
valid_to        timestamp[us, UTC]     null while current; the effective time of the version that closed it
status          string                 ``current`` / ``superseded`` / ``deleted``
version_number  int64                  document version that created the row
parent_hash     string                 chunk_id of the paragraph this one replaced at the same position, or null
change_type     string                 CDC class that created the row (``new`` / ``modified`` / ``moved``);
                                       ``deleted`` once its text left the document
==============  =====================  ===========================================================================

**Row key.** ``chunk_id`` is the plain content hash (the paper's formula), and the document is part of the key:
a paragraph's identity is ``(doc_id, chunk_id)``, so the same paragraph in two documents is two independent rows
and deleting it from one never touches the other (the public code's global hash set gets this wrong). One row
is one validity interval of that paragraph at one position, keyed ``(doc_id, chunk_id, position, valid_from)``:
a document may hold the same paragraph twice, or revert to an earlier text, and each occurrence gets its own
row. Writes match rows on that key.

**Status.** A closed row is ``superseded`` when its text lives on (in a ``moved`` row) or was replaced in place
by a ``modified`` paragraph (whose ``parent_hash`` is this row's ``chunk_id``), ``deleted`` when its text left the
document. ``unchanged`` is a CDC class but never a row's ``change_type``: unchanged paragraphs are not rewritten.

**Validity.** A row is valid at ``T`` when ``valid_from <= T < valid_to``, a null ``valid_to`` read as +inf
(:func:`valid_at`). Rows are never left open once superseded or deleted (the public code never closes them).
Unchanged paragraphs keep their row across versions (no new row, no rewrite of its values).

**Writes.** Every ingest (a batch of document versions, :mod:`.batch`; one version through ``ingest_document``)
is ONE Delta commit: a MERGE whose source holds the rows to close (matched on the row key: ``valid_to``,
``status``, ``change_type`` updated) and the rows to add (not matched: inserted; a row the same batch opened and
closed is inserted closed). The commit carries the lake's ingest sequence number as a Delta transaction
identifier (``txn`` action, app id ``livevectorlake``), so the latest applied sequence number is part of the
table snapshot (:meth:`ColdTier.seq`), plus the document, version and change counts in the commit info (for a
batch of several versions: their number, the documents' number and the summed counts).

**Reads.** :meth:`ColdTier.snapshot` reads the whole table into numpy arrays (sorted by doc_id, position,
valid_from) and caches it; the cache is dropped on every write through this object (single writer: another
process writing the same table is not noticed). :meth:`ColdTier.scan_valid_at` reads only the rows valid at
``T`` with a filter pushed into the Parquet scan (no cache).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction

from smartvector_bench.core.timeutil import EPOCH

APP_ID = "livevectorlake"
INF_US = np.iinfo(np.int64).max  # an open valid_to
US_PER_DAY = 86_400_000_000
STATUSES = ("current", "superseded", "deleted")
CHANGE_TYPES = ("new", "modified", "moved", "unchanged", "deleted")  # "unchanged" rows are never rewritten
TS = pa.timestamp("us", tz="UTC")

SCHEMA = pa.schema([
    ("chunk_id", pa.string()),
    ("doc_id", pa.string()),
    ("position", pa.int64()),
    ("text", pa.string()),
    ("embedding", pa.list_(pa.float32())),
    ("valid_from", TS),
    ("valid_to", TS),
    ("status", pa.string()),
    ("version_number", pa.int64()),
    ("parent_hash", pa.string()),
    ("change_type", pa.string()),
])
COLUMNS = tuple(SCHEMA.names)
KEY = ("doc_id", "chunk_id", "position", "valid_from")

RowKey = tuple  # (doc_id, chunk_id, position, valid_from_us)


# -- time ------------------------------------------------------------------------------------------------------

def to_us(t: float | datetime) -> int:
    """Microseconds since the epoch from float days since the epoch (the repo's time unit) or an aware datetime."""
    if isinstance(t, datetime):
        if t.tzinfo is None:
            raise ValueError(f"time {t!r} has no timezone; every time here is UTC")
        return (t.astimezone(timezone.utc) - EPOCH) // timedelta(microseconds=1)
    t = float(t)
    if not np.isfinite(t):
        raise ValueError(f"time {t!r} is not finite")
    return int(round(t * US_PER_DAY))


def us_to_days(us: int) -> float:
    return np.inf if us >= INF_US else us / US_PER_DAY


def iso(us: int) -> str | None:
    if us >= INF_US:
        return None
    t = EPOCH + timedelta(microseconds=int(us))
    return f"{t.year:04d}" + t.strftime("-%m-%dT%H:%M:%S.%fZ")  # %Y does not pad years below 1000


def valid_at(valid_from: np.ndarray, valid_to: np.ndarray, t_us: int) -> np.ndarray:
    """``valid_from <= T < valid_to`` (``valid_to`` = ``INF_US`` when open): the window is closed on the left,
    open on the right, so at a version change exactly one of the two versions is valid."""
    return (valid_from <= t_us) & (t_us < valid_to)


# -- rows ------------------------------------------------------------------------------------------------------

@dataclass
class Row:
    """One cold-tier row (times in microseconds; ``valid_to`` = ``INF_US`` while open)."""

    doc_id: str
    chunk_id: str
    position: int
    text: str
    embedding: np.ndarray
    valid_from: int
    valid_to: int = INF_US
    status: str = "current"
    version_number: int = 0
    parent_hash: str | None = None
    change_type: str = "new"

    @property
    def key(self) -> RowKey:
        return (self.doc_id, self.chunk_id, self.position, self.valid_from)


@dataclass(frozen=True)
class Close:
    """Close one open row: set ``valid_to``, ``status`` (superseded / deleted) and ``change_type``."""

    key: RowKey
    valid_to: int
    status: str
    change_type: str


def _ts(values: list[int]) -> pa.Array:
    return pa.array([None if v >= INF_US else v for v in values], type=pa.int64()).cast(TS)


def _source_table(closes: list[Close], adds: list[Row]) -> pa.Table:
    n = len(closes) + len(adds)
    cols: dict[str, list] = {c: [] for c in COLUMNS}
    for c in closes:
        doc_id, chunk_id, position, valid_from = c.key
        for name, value in (("chunk_id", chunk_id), ("doc_id", doc_id), ("position", position), ("text", None),
                            ("embedding", None), ("valid_from", valid_from), ("valid_to", c.valid_to),
                            ("status", c.status), ("version_number", None), ("parent_hash", None),
                            ("change_type", c.change_type)):
            cols[name].append(value)
    for r in adds:
        for name in COLUMNS:
            value = getattr(r, name)
            cols[name].append(np.asarray(value, dtype=np.float32).tolist() if name == "embedding" else value)
    arrays = []
    for field in SCHEMA:
        if field.name in ("valid_from", "valid_to"):
            arrays.append(_ts(cols[field.name]))
        else:
            arrays.append(pa.array(cols[field.name], type=field.type))
    table = pa.Table.from_arrays(arrays, schema=SCHEMA)
    assert table.num_rows == n
    return table


# -- snapshot --------------------------------------------------------------------------------------------------

@dataclass
class ColdSnapshot:
    """The table (or the part of it valid at one time) as numpy columns, sorted by (doc_id, position,
    valid_from). ``valid_to`` holds ``INF_US`` for open rows."""

    table_version: int
    chunk_id: np.ndarray
    doc_id: np.ndarray
    position: np.ndarray
    text: np.ndarray
    embedding: np.ndarray  # (n, dim) float32
    valid_from: np.ndarray
    valid_to: np.ndarray
    status: np.ndarray
    version_number: np.ndarray
    parent_hash: np.ndarray
    change_type: np.ndarray
    load_s: float = 0.0

    def __len__(self) -> int:
        return len(self.chunk_id)

    @classmethod
    def from_arrow(cls, table: pa.Table, dim: int, table_version: int, load_s: float = 0.0) -> ColdSnapshot:
        n = table.num_rows
        emb_col = table.column("embedding").combine_chunks()
        if n:
            lengths = pc.list_value_length(emb_col).to_numpy(zero_copy_only=False)
            if emb_col.null_count or not np.all(lengths == dim):
                raise ValueError(f"cold tier: embeddings must all have {dim} values")
            emb = np.asarray(pc.list_flatten(emb_col).to_numpy(zero_copy_only=False), dtype=np.float32)
            emb = emb.reshape(n, dim)
        else:
            emb = np.zeros((0, dim), dtype=np.float32)

        def obj(name: str) -> np.ndarray:
            return np.array(table.column(name).to_pylist(), dtype=object)

        def ints(name: str, null: int) -> np.ndarray:
            col = table.column(name)
            if pa.types.is_timestamp(col.type):
                col = col.cast(pa.int64())
            return np.asarray(pc.fill_null(col, null).to_numpy(), dtype=np.int64) if n else np.zeros(0, np.int64)

        snap = cls(table_version=table_version, chunk_id=obj("chunk_id"), doc_id=obj("doc_id"),
                   position=ints("position", -1), text=obj("text"), embedding=emb,
                   valid_from=ints("valid_from", INF_US), valid_to=ints("valid_to", INF_US), status=obj("status"),
                   version_number=ints("version_number", -1), parent_hash=obj("parent_hash"),
                   change_type=obj("change_type"), load_s=load_s)
        return snap.sorted()

    def take(self, rows: np.ndarray) -> ColdSnapshot:
        return ColdSnapshot(self.table_version, *(getattr(self, f)[rows] for f in (
            "chunk_id", "doc_id", "position", "text", "embedding", "valid_from", "valid_to", "status",
            "version_number", "parent_hash", "change_type")), load_s=self.load_s)

    def sorted(self) -> ColdSnapshot:
        if not len(self):
            return self
        order = np.lexsort((self.valid_from, self.position, self.doc_id.astype(str)))
        return self.take(order)

    def key(self, i: int) -> RowKey:
        return (self.doc_id[i], self.chunk_id[i], int(self.position[i]), int(self.valid_from[i]))

    def current(self) -> np.ndarray:
        """Row numbers of the current rows (status ``current``, ``valid_to`` open)."""
        return np.nonzero((self.status == "current") & (self.valid_to == INF_US))[0]

    def row(self, i: int) -> Row:
        return Row(doc_id=self.doc_id[i], chunk_id=self.chunk_id[i], position=int(self.position[i]),
                   text=self.text[i], embedding=self.embedding[i], valid_from=int(self.valid_from[i]),
                   valid_to=int(self.valid_to[i]), status=self.status[i],
                   version_number=int(self.version_number[i]), parent_hash=self.parent_hash[i],
                   change_type=self.change_type[i])


# -- the tier --------------------------------------------------------------------------------------------------

class ColdTier:
    """The Delta table at ``path`` (created empty, at sequence 0, when missing)."""

    def __init__(self, path: str | Path, dim: int):
        self.path = Path(path)
        self.dim = int(dim)
        if DeltaTable.is_deltatable(str(self.path)):
            self._dt = DeltaTable(str(self.path))
            names = tuple(self._dt.schema().to_arrow().names)
            if names != COLUMNS:
                raise ValueError(f"{self.path}: not a LiveVectorLake cold table (columns {names})")
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            self._dt = DeltaTable.create(
                str(self.path), SCHEMA, name="livevectorlake_cold",
                description="LiveVectorLake cold tier: every paragraph version with its validity window",
                commit_properties=CommitProperties(custom_metadata={"livevectorlake.seq": "0"},
                                                   app_transactions=[Transaction(APP_ID, 0)]))
        self._snap: ColdSnapshot | None = None
        self.loads = 0  # full-table reads (cache misses)

    @property
    def version(self) -> int:
        return int(self._dt.version())

    def seq(self) -> int:
        """The sequence number of the last ingest committed to this table (0 when none)."""
        v = self._dt.transaction_version(APP_ID)
        return 0 if v is None else int(v)

    def refresh(self) -> None:
        """Re-read the table from disk (e.g. at recovery) and drop the cache."""
        self._dt = DeltaTable(str(self.path))
        self._snap = None

    def commit(self, closes: list[Close], adds: list[Row], seq: int, info: dict) -> dict:
        """One atomic Delta commit: close ``closes``, insert ``adds``, tag it with ``seq``. Returns the merge
        metrics plus ``table_version``. Raises if the table did not do exactly that."""
        if not closes and not adds:
            raise ValueError("nothing to commit")
        source = _source_table(closes, adds)
        meta = {"livevectorlake.seq": str(seq), **{f"livevectorlake.{k}": (v if isinstance(v, str) else
                                                                              json.dumps(v, sort_keys=True))
                                                  for k, v in info.items()}}
        self._snap = None  # invalidated on every write, whatever happens next
        # The documents written are named as literals in the predicate (and source statistics are not turned
        # off by a streamed source) so the merge prunes the files of other documents by their doc_id
        # statistics instead of scanning the whole table on every ingest; the matched rows are the same.
        docs = sorted({r.doc_id for r in adds} | {c.key[0] for c in closes})
        names = ", ".join("'" + d.replace("'", "''") + "'" for d in docs)
        predicate = (f"t.doc_id IN ({names})" if len(docs) > 1 else f"t.doc_id = {names}") + " AND " + \
            " AND ".join(f"t.{k} = s.{k}" for k in KEY)
        metrics = (
            self._dt.merge(source, predicate, source_alias="s", target_alias="t", streamed_exec=False,
                           commit_properties=CommitProperties(custom_metadata=meta,
                                                              app_transactions=[Transaction(APP_ID, seq)]))
            .when_matched_update(updates={"valid_to": "s.valid_to", "status": "s.status",
                                          "change_type": "s.change_type"})
            .when_not_matched_insert_all()
            .execute()
        )
        # the merge moved this object's table state to the new version (no re-open of the log needed)
        if (metrics.get("num_target_rows_updated"), metrics.get("num_target_rows_inserted")) != (len(closes), len(adds)):
            raise RuntimeError(f"cold tier commit {seq}: expected {len(closes)} rows closed and {len(adds)} added, "
                               f"the merge reports {metrics}")
        if self.seq() != seq:
            raise RuntimeError(f"cold tier commit {seq}: the table's sequence number is {self.seq()}")
        return {**metrics, "table_version": self.version}

    def snapshot(self) -> ColdSnapshot:
        """The whole table as numpy arrays; cached until the next write through this object."""
        if self._snap is None:
            t0 = time.perf_counter()
            table = self._dt.to_pyarrow_table()
            self._snap = ColdSnapshot.from_arrow(table, self.dim, self.version, time.perf_counter() - t0)
            self.loads += 1
        return self._snap

    def scan_valid_at(self, t_us: int) -> ColdSnapshot:
        """Only the rows valid at ``t_us``, filtered inside the Parquet scan (uncached)."""
        t0 = time.perf_counter()
        ts = pa.scalar(t_us, type=pa.int64()).cast(TS)
        flt = (pc.field("valid_from") <= ts) & (pc.field("valid_to").is_null() | (pc.field("valid_to") > ts))
        table = self._dt.to_pyarrow_dataset().to_table(filter=flt)
        return ColdSnapshot.from_arrow(table, self.dim, self.version, time.perf_counter() - t0)

    def history(self, limit: int | None = None) -> list[dict]:
        return self._dt.history(limit)

    def compact(self) -> dict:
        """Merge the small files that one commit per ingest leaves (a Delta OPTIMIZE; rows unchanged)."""
        out = self._dt.optimize.compact()
        self.refresh()
        return out
