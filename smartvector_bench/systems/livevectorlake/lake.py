"""LiveVectorLake (arXiv 2601.05270): paragraph-level CDC into a Delta Lake cold tier and a hot tier of the
current rows (a Milvus collection, as in the paper, :mod:`.hot_milvus`; or FAISS, :mod:`.hot`), with as-of
queries.

Public API (everything else is private)::

    lake = LiveVectorLake.open(path, dim=384)            # create or reopen; always runs recover()
    res = lake.ingest_document(doc_id, version, text, effective_at, vectors_for)   # -> IngestResult
    out = lake.ingest_batch([BatchItem(doc_id, version, text, effective_at, vectors_for), ...])  # -> BatchResult
    out = lake.query(vector, as_of=None, k=10)           # -> QueryResult (hits best first, tier used)
    lake.recover()                                       # -> dict: what recovery found and did
    lake.document_as_of(doc_id, as_of)                   # the document's paragraphs valid at as_of
    lake.check()                                         # hot tier == cold tier's current rows?
    LiveVectorLake.status(path)                          # sequence numbers on disk, without recovering

Times (``effective_at``, ``as_of``) are float days since the Unix epoch (the repo's unit) or aware datetimes;
they are stored as microseconds. Vectors are expected L2-normalised (scores are inner products = cosines).
One writer per lake folder (no locking); readers of other processes do not see its cache.

**Ingest** (:meth:`LiveVectorLake.ingest_document`). The text is split into paragraphs (blank lines;
``chunking.chunk_paragraphs``), each identified by SHA-256 of its normalised text (``updates.chunk_hash``:
strip, collapse whitespace, case-fold), and compared with the document's current paragraphs by
``updates.cdc`` (per document, never global): ``unchanged`` (same hash, same position: the row is kept, no new
row), ``moved`` (the hash was at another position: new row, vector reused, not embedded), ``modified`` (another
hash at a position the old version had), ``new`` (a position beyond the old end), ``deleted`` (old positions
beyond the new end, as ``cdc`` counts them). ``vectors_for(texts)`` is called once, with only the ``new`` and
``modified`` paragraphs. Every old row whose position did not stay unchanged is closed; its status is
``superseded`` when its text lives on in a moved row or was replaced in place by a modified one, ``deleted`` when
its text left the document (so after [A, B, C] -> [B, C], A's row is the deleted one, though ``cdc`` counts the
vacated last position).
A paragraph that reverts to a text the document had two versions ago is ``modified`` (CDC compares with the
previous version only) and is embedded again. Versions of one document must come in increasing
``effective_at``; a version identical to the current one (under normalisation) changes nothing and writes
nothing.

**Batches** (:meth:`LiveVectorLake.ingest_batch`). The unit of writing is a batch of versions (any documents,
a document several times); ``ingest_document`` is the batch of one. The CDC above runs on each version in
order, a document's later versions seeing its earlier ones from the same batch, in memory
(:mod:`.batch`), then the batch is written as below: one commit, one sequence number, one hot-tier update for
the whole batch. The rows, windows, statuses and per-version results are those of ingesting the versions one
by one (a row opened and closed within the batch is inserted already closed); only the sequence numbers and
table versions differ: there is one per batch, so ``seq`` counts batches that wrote something, not versions.
A batch that fails before its commit (a version out of time order, a bad vector shape) writes nothing.

**Write order and recovery.** Each batch that changes something (1) writes the cold tier: one Delta commit
that closes the superseded / deleted rows (``valid_to`` = ``effective_at``) and appends the new rows, tagged with
the next ingest sequence number; then (2) updates the hot tier and records the applied sequence number in
``hot/state.json`` (atomic write). The cold tier is the source of truth: the CDC state (each document's
current paragraphs, hashes and vectors) is read back from its current rows, so there is no separate hash
store to lose or corrupt. :meth:`recover` (run by :meth:`open`, and automatically before the next call after an
ingest failed midway) reloads that state and rebuilds the hot tier from the cold tier's current rows when its
applied sequence differs from the cold tier's, when its data (FAISS files, Milvus collection) is missing,
unreadable or not what its state file records, or when its rows differ. A writer killed between (1) and (2)
therefore loses nothing: the batch is in the cold tier and the hot tier is rebuilt on the next open. A crash
inside (1) leaves the previous Delta version (commits are atomic).

**Queries** (:meth:`LiveVectorLake.query`). ``tier="auto"`` uses the hot tier when it is exact for ``as_of``:
``as_of`` is None ("now") or not before the lake's *horizon*, the latest time any row opened or closed (after it
the current rows are exactly the rows valid). Otherwise, or with ``tier="cold"``, the cold tier answers: rows
are filtered by ``valid_from <= as_of < valid_to`` BEFORE ranking by cosine (ranking first and filtering the
top k afterwards would drop valid rows behind invalid ones and, in an index holding history, return rows from
the query's future). ``tier="hot"`` forces the hot tier and refuses an ``as_of`` before the horizon.

Fault injection for crash tests: ``lake.fault_hook = fn`` is called as ``fn(stage, seq)`` at
``after_cold_commit`` (cold committed, hot untouched) and ``before_hot_state`` (hot data written: FAISS files,
or the Milvus collection changed in place; state not yet); an exception there aborts the ingest. The
environment variable ``SMARTVECTOR_LVL_FAULT=<stage>:<seq>:<pause|exit>`` does the same from outside a
process: ``pause`` prints ``LVL_FAULT_PAUSED stage=<stage> seq=<seq>`` on stdout and sleeps until the process
is killed; ``exit`` ends the process at once (``os._exit(75)``).

Why this module is long: ingest, recovery and the tier choice of a query share one piece of state (each
document's current rows and the applied sequence number), and the write order above is only checkable when the
code that keeps it reads top to bottom in one class.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from smartvector_bench.core.atomic import atomic_write_json
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.updates import Chunker, DocumentStore
from smartvector_bench.systems.livevectorlake.cold import (
    APP_ID, INF_US, ColdSnapshot, ColdTier, Row, iso, to_us, us_to_days, valid_at,
)
from smartvector_bench.systems.livevectorlake.batch import BatchItem, BatchResult, VectorsFor, plan_batch
from smartvector_bench.systems.livevectorlake.batch import DocState as _Doc
from smartvector_bench.systems.livevectorlake.hot import KINDS as HOT_KINDS
from smartvector_bench.systems.livevectorlake.hot import HotTier, read_state
from smartvector_bench.systems.livevectorlake.hot_milvus import KINDS as MILVUS_KINDS
from smartvector_bench.systems.livevectorlake.hot_milvus import MilvusHotTier
from smartvector_bench.systems.livevectorlake.rows import Hit, IngestResult, QueryResult, Time

FAULT_ENV = "SMARTVECTOR_LVL_FAULT"
FAULT_STAGES = ("after_cold_commit", "before_hot_state")
TIERS = ("auto", "hot", "cold")
FORMAT = {"format": "livevectorlake", "format_version": 1, "chunker": "paragraphs (blank lines)",
          "chunk_id": "sha256(normalise(text)) hex; normalise = strip, collapse whitespace runs, case-fold",
          "row_key": "(doc_id, chunk_id, position, valid_from)"}


def _fault_from_env(stage: str, seq: int) -> None:
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    try:
        want_stage, want_seq, action = spec.split(":")
        want_seq_i = int(want_seq)
    except ValueError:
        raise BenchError(f"{FAULT_ENV}={spec!r}: expected <stage>:<seq>:<pause|exit>") from None
    if want_stage != stage or want_seq_i != seq:
        return
    if action == "exit":
        os._exit(75)
    if action == "pause":
        print(f"LVL_FAULT_PAUSED stage={stage} seq={seq}", flush=True)
        while True:
            time.sleep(3600)
    raise BenchError(f"{FAULT_ENV}={spec!r}: action must be pause or exit")


# -- the lake --------------------------------------------------------------------------------------------------

class LiveVectorLake:
    """A lake folder: ``lake.json`` (dim and format), ``cold/`` (the Delta table), ``hot/`` (the hot tier's
    state and, for a local Milvus, its milvus-lite folder ``milvus.db``)."""

    def __init__(self, path: Path, dim: int, hot_index: str, cold_cache: bool, hnsw: tuple[int, int, int],
                 compact_every: int | None = None, milvus: dict | None = None):
        self.path = path
        self.dim = dim
        self.cold_cache = cold_cache
        self.compact_every = compact_every
        self.chunker = Chunker("paragraphs")
        self.cold = ColdTier(path / "cold", dim)
        self._hot_args = (hot_index, *hnsw, dict(milvus or {}))  # milvus: uri, token, collection
        self.hot = self._new_hot()
        self.fault_hook: Callable[[str, int], None] | None = None
        self.recoveries: list[dict] = []
        self._docs: dict[str, _Doc] = {}
        self._current: dict[tuple, Row] = {}
        self._seq = 0
        self._horizon_us: int | None = None
        self._dirty = True  # in-memory state not loaded / not known to match the disk

    # -- opening and recovery --------------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, dim: int | None = None, *, hot_index: str = "milvus", cold_cache: bool = True,
             hnsw_m: int = 16, hnsw_ef_construction: int = 200, hnsw_ef_search: int = 64,
             compact_every: int | None = None, milvus_uri: str | None = None, milvus_token: str | None = None,
             milvus_collection: str | None = None) -> LiveVectorLake:
        """Open the lake at ``path`` (creating it when ``lake.json`` is missing; ``dim`` is then required) and
        :meth:`recover` it. ``hot_index``: ``milvus`` (a Milvus collection, FLAT index: exact), ``milvus_hnsw``
        (its HNSW index), ``flat`` (FAISS, exact) or ``hnsw`` (FAISS HNSW); ``milvus_uri``: None for Milvus Lite
        in ``hot/milvus.db``, else a server (``http://host:19530``, with ``milvus_token`` if it needs one);
        ``milvus_collection``: the prefix of the lake's collection names there; ``cold_cache``: keep the cold
        table in memory between cold queries (dropped on every write) instead of scanning Delta per query;
        ``compact_every``: compact the cold table's small files (:meth:`compact`) after every that many
        ingest commits (None / 0: never). One commit per ingest leaves one small file per ingest, and a MERGE reads
        every file, so its cost grows with the number of files and ingesting thousands of versions is quadratic
        without compaction; rows and sequence numbers are unchanged
        (the Delta table version counts the compaction commits too)."""
        root = Path(path)
        meta_path = root / "lake.json"
        if meta_path.is_file():
            try:
                meta = json.loads(meta_path.read_text(encoding="utf-8"))
                stored = int(meta["dim"])
            except (ValueError, KeyError, TypeError) as exc:
                raise BenchError(f"{meta_path}: not a LiveVectorLake metadata file ({exc})") from None
            if dim is not None and int(dim) != stored:
                raise BenchError(f"{root}: the lake holds {stored}-dimensional vectors, not {dim}")
            dim = stored
        else:
            if dim is None or int(dim) < 1:
                raise BenchError(f"{root}: no lake here yet; creating one needs dim (the vector size)")
            atomic_write_json(meta_path, {**FORMAT, "dim": int(dim)})
        lake = cls(root, int(dim), hot_index, bool(cold_cache), (hnsw_m, hnsw_ef_construction, hnsw_ef_search),
                   int(compact_every) if compact_every else None,
                   {"uri": milvus_uri, "token": milvus_token, "collection": milvus_collection})
        lake.recover()
        return lake

    @staticmethod
    def status(path: str | Path) -> dict:
        """The cold tier's latest ingest sequence number and the hot tier's applied one, read from disk without
        opening or recovering the lake (None where a tier has none)."""
        from deltalake import DeltaTable


        root = Path(path)
        cold = None
        if DeltaTable.is_deltatable(str(root / "cold")):
            cold = DeltaTable(str(root / "cold")).transaction_version(APP_ID)
        hot = read_state(root / "hot")
        return {"cold_seq": cold, "hot_seq": None if hot is None else hot["applied_seq"]}

    def _new_hot(self) -> HotTier | MilvusHotTier:
        kind, m, ef_c, ef_s, milvus = self._hot_args
        if kind in MILVUS_KINDS:
            hot = MilvusHotTier(self.path / "hot", self.dim, kind, m, ef_c, ef_s, **milvus)
        elif kind in HOT_KINDS:
            hot = HotTier(self.path / "hot", self.dim, kind, m, ef_c, ef_s)
        else:
            allowed = (*MILVUS_KINDS[:1], *HOT_KINDS, *MILVUS_KINDS[1:])
            raise ValueError(f"hot_index={kind}: unknown; allowed: {', '.join(allowed)}")
        hot.before_state = lambda seq: self._fault("before_hot_state", seq)
        return hot

    def recover(self) -> dict:
        """Reload the CDC state from the cold tier and make the hot tier equal to its current rows.

        Returns ``{"cold_seq", "hot_seq_before", "rebuilt", "reason"}``: the hot tier is rebuilt from the cold
        tier's current rows when its state file or data files are missing or unreadable, when its applied
        sequence number differs from the cold tier's latest, or when its rows differ from the current rows.
        """
        self.cold.refresh()
        snap = self.cold.snapshot()
        cold_seq = self.cold.seq()
        self._load_docs(snap)
        hot = self._new_hot()
        reason = hot.load()
        before = hot.applied_seq
        current = sorted(self._current)
        if reason is None and hot.applied_seq != cold_seq:
            reason = f"hot tier applied sequence {hot.applied_seq}, cold tier at {cold_seq}"
        if reason is None and hot.keys() != current:
            reason = "hot tier rows differ from the cold tier's current rows"
        if reason is not None:
            vectors = (np.stack([self._current[k].embedding for k in current]) if current
                       else np.zeros((0, self.dim), dtype=np.float32))
            hot.rebuild(current, vectors, cold_seq)
        self.hot = hot
        self._seq = cold_seq
        self._dirty = False
        report = {"cold_seq": cold_seq, "hot_seq_before": before, "rebuilt": reason is not None, "reason": reason}
        self.recoveries.append(report)
        return report

    def _load_docs(self, snap: ColdSnapshot) -> None:
        docs: dict[str, _Doc] = {}
        current: dict[tuple, Row] = {}
        horizon = None
        last: dict[str, int] = {}
        for i in range(len(snap)):
            d = snap.doc_id[i]
            t = int(snap.valid_from[i]) if snap.valid_to[i] >= INF_US else int(snap.valid_to[i])
            last[d] = max(last.get(d, t), t)
            horizon = t if horizon is None else max(horizon, t)
        by_doc: dict[str, list[Row]] = {}
        for i in snap.current():
            row = snap.row(int(i))
            by_doc.setdefault(row.doc_id, []).append(row)
            current[row.key] = row
        for doc_id in sorted(last):
            rows = sorted(by_doc.get(doc_id, []), key=lambda r: r.position)
            if [r.position for r in rows] != list(range(len(rows))):
                raise BenchError(f"{self.cold.path}: {doc_id}: current rows at positions "
                                 f"{[r.position for r in rows]}, expected 0..{len(rows) - 1}")
            docs[doc_id] = _Doc(rows, self._store(doc_id, rows), last[doc_id])
        self._docs, self._current, self._horizon_us = docs, current, horizon

    def _store(self, doc_id: str, rows: list[Row]) -> DocumentStore:
        text = "\n\n".join(r.text for r in rows)
        chunks = self.chunker(text)
        if [c.text for c in chunks] != [r.text for r in rows]:
            raise BenchError(f"{self.cold.path}: {doc_id}: current rows do not re-chunk into themselves")
        vectors = (np.stack([r.embedding for r in rows]) if rows else np.zeros((0, self.dim), dtype=np.float32))
        return DocumentStore(doc_id, text, chunks, vectors, self.chunker, self.dim, [r.chunk_id for r in rows])

    def _ready(self) -> None:
        if self._dirty:
            self.recover()

    def _fault(self, stage: str, seq: int) -> None:
        if self.fault_hook is not None:
            self.fault_hook(stage, seq)
        _fault_from_env(stage, seq)

    # -- ingest ----------------------------------------------------------------------------------------------

    def ingest_document(self, doc_id: str, version: int, text: str, effective_at: Time,
                        vectors_for: VectorsFor) -> IngestResult:
        """Ingest one version of a document, in effect from ``effective_at``: the batch of one
        (:meth:`ingest_batch`).

        ``vectors_for(texts) -> (len(texts), dim)`` embeds paragraphs; it is called at most once, with only the
        ``new`` and ``modified`` ones. Superseded rows are closed and deleted rows are closed and marked
        ``deleted``, both with ``valid_to = effective_at``; new, modified and moved paragraphs get new rows with
        ``valid_from = effective_at``. An empty ``text`` deletes the whole document from ``effective_at`` on.
        """
        return self.ingest_batch([BatchItem(doc_id, version, text, effective_at, vectors_for)]).results[0]

    def ingest_batch(self, items: Iterable[BatchItem]) -> BatchResult:
        """Ingest document versions (:class:`BatchItem` or ``(doc_id, version, text, effective_at,
        vectors_for)``) in the order given, each as :meth:`ingest_document` would, written as ONE cold-tier
        commit and ONE hot-tier update tagged with one sequence number (see *Batches* above)."""
        self._ready()
        t0 = time.perf_counter()
        plan = plan_batch(self._docs, items, self.chunker, self.dim, self.cold.version)
        t_cdc = time.perf_counter()
        out = BatchResult(plan.results, None, self.cold.version, len(plan.closes), len(plan.adds),
                          len(plan.adds) - len(plan.live), {"cdc": t_cdc - t0, "cold": 0.0, "hot": 0.0})
        if not plan.closes and not plan.adds:  # only identical versions: nothing to write
            self._docs.update(plan.docs)  # their times still count for the time-order check
            return out

        seq = self._seq + 1
        self._dirty = True  # until both tiers hold this batch; the next call recovers otherwise
        commit = self.cold.commit(plan.closes, plan.adds, seq, plan.info)
        self._seq = seq
        self._docs.update(plan.docs)
        for c in plan.closes:
            self._current.pop(c.key, None)
        live = plan.live
        for r in live:
            self._current[r.key] = r
        self._horizon_us = plan.horizon_us if self._horizon_us is None else max(self._horizon_us, plan.horizon_us)
        t_cold = time.perf_counter()
        self._fault("after_cold_commit", seq)
        vectors = (np.stack([r.embedding for r in live]) if live else np.zeros((0, self.dim), dtype=np.float32))
        self.hot.apply([c.key for c in plan.closes], [r.key for r in live], vectors, seq)
        self._dirty = False
        t_hot = time.perf_counter()
        out.seq, out.cold_version = seq, commit["table_version"]
        out.timings_s.update(cold=t_cold - t_cdc, hot=t_hot - t_cold)
        written = [r for r in plan.results if r.rows_added or r.rows_closed]
        for r in plan.results:
            r.cold_version = out.cold_version
        for r in written:  # each version's share of the one commit and the one hot-tier update
            r.seq = seq
            r.timings_s.update(cold=out.timings_s["cold"] / len(written), hot=out.timings_s["hot"] / len(written))
        if self.compact_every and seq % self.compact_every == 0:
            self.cold.compact()  # the batch is complete in both tiers; this only merges small files
            out.timings_s["compact"] = written[-1].timings_s["compact"] = time.perf_counter() - t_hot
        return out

    # -- queries ---------------------------------------------------------------------------------------------

    def hot_is_exact(self, as_of: Time | None) -> bool:
        """True when the hot tier's rows are exactly the rows valid at ``as_of`` (None = now)."""
        return as_of is None or self._horizon_us is None or to_us(as_of) >= self._horizon_us

    def query(self, vector: np.ndarray, as_of: Time | None = None, k: int = 10, tier: str = "auto") -> QueryResult:
        """The ``k`` paragraphs most similar to ``vector`` among those valid at ``as_of`` (None: the current
        ones), best first. ``tier``: ``auto`` (hot when exact for ``as_of``, else cold), ``cold``, or ``hot``
        (refused for an ``as_of`` before the horizon)."""
        if tier not in TIERS:
            raise BenchError(f"tier={tier}: unknown; allowed: {', '.join(TIERS)}")
        self._ready()
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        if q.shape != (self.dim,):
            raise BenchError(f"query vector has {q.size} values, the lake holds {self.dim}-dimensional vectors")
        exact = self.hot_is_exact(as_of)
        if tier == "hot" and not exact:
            raise BenchError(f"tier=hot: as_of {iso(to_us(as_of))} is before the lake's horizon "
                             f"{iso(self._horizon_us)}; the hot tier holds only the current rows")
        t0 = time.perf_counter()
        if tier == "hot" or (tier == "auto" and exact):
            hits = [self._hit(self._current[key], score, "hot") for key, score in self.hot.search(q, k)]
            used = "hot"
        else:
            t_us = INF_US - 1 if as_of is None else to_us(as_of)
            snap = self.cold.snapshot() if self.cold_cache else self.cold.scan_valid_at(t_us)
            rows = np.nonzero(valid_at(snap.valid_from, snap.valid_to, t_us))[0]  # filter first, then rank
            scores = snap.embedding[rows] @ q
            order = np.lexsort((rows, -scores))[:k]  # ties: table order (doc_id, position, valid_from)
            hits = [self._hit(snap.row(int(rows[o])), float(scores[o]), "cold") for o in order]
            used = "cold"
        return QueryResult(hits, used, as_of, time.perf_counter() - t0)

    @staticmethod
    def _hit(row: Row, score: float, tier: str) -> Hit:
        return Hit(doc_id=row.doc_id, chunk_id=row.chunk_id, position=row.position, text=row.text,
                   score=float(score), valid_from=us_to_days(row.valid_from), valid_to=us_to_days(row.valid_to),
                   version_number=row.version_number, tier=tier)

    def document_as_of(self, doc_id: str, as_of: Time) -> str | None:
        """The document as it stood at ``as_of``, rebuilt from the cold tier (paragraphs valid then, in position
        order, joined by blank lines); None when it had no paragraph then."""
        self._ready()
        snap = self.cold.snapshot()
        rows = np.nonzero((snap.doc_id == doc_id) & valid_at(snap.valid_from, snap.valid_to, to_us(as_of)))[0]
        if not len(rows):
            return None
        rows = rows[np.argsort(snap.position[rows], kind="stable")]
        return "\n\n".join(snap.text[i] for i in rows)

    # -- inspection ------------------------------------------------------------------------------------------

    @property
    def seq(self) -> int:
        """Sequence number of the last committed ingest."""
        return self._seq

    @property
    def horizon(self) -> float | None:
        """Latest time (days) at which any row opened or closed; from then on the hot tier is exact."""
        return None if self._horizon_us is None else us_to_days(self._horizon_us)

    @property
    def documents(self) -> list[str]:
        return sorted(self._docs)

    def check(self) -> dict:
        """Consistency of the two tiers and of the validity columns (read from disk-backed state)."""
        self._ready()
        snap = self.cold.snapshot()
        cur = snap.current()
        cold = {snap.key(int(i)): snap.embedding[int(i)] for i in cur}
        hot_keys = self.hot.keys()
        same = set(hot_keys) == set(cold) and len(hot_keys) == len(cold)
        diff = (max((float(np.max(np.abs(self.hot.vector(k) - cold[k]))) for k in hot_keys), default=0.0)
                if same else None)
        open_rows = snap.valid_to >= INF_US
        out = {
            "hot_rows": len(self.hot), "cold_rows": len(snap), "cold_current_rows": len(cold),
            "same_rows": same, "max_abs_vector_diff": diff,
            "hot_seq": self.hot.applied_seq, "cold_seq": self.cold.seq(), "cold_table_version": self.cold.version,
            "open_rows_not_current": int(np.sum(open_rows & (snap.status != "current"))),
            "closed_rows_marked_current": int(np.sum(~open_rows & (snap.status == "current"))),
            "rows_closed_before_opening": int(np.sum(snap.valid_to <= snap.valid_from)),
        }
        out["consistent"] = bool(same and diff == 0.0 and out["hot_seq"] == out["cold_seq"]
                                 and not out["open_rows_not_current"] and not out["closed_rows_marked_current"]
                                 and not out["rows_closed_before_opening"])
        return out

    def describe(self) -> dict:
        return {"path": str(self.path), "cold_table": str(self.cold.path), "cold_table_version": self.cold.version,
                "cold_rows": len(self.cold.snapshot()), "seq": self._seq, "hot_rows": len(self.hot),
                "hot_index": self.hot.kind, "hot_applied_seq": self.hot.applied_seq,
                **({"hot_milvus": self.hot.describe()} if isinstance(self.hot, MilvusHotTier) else {}),
                "horizon": iso(self._horizon_us) if self._horizon_us is not None else None,
                "documents": len(self._docs), "recoveries": list(self.recoveries)}

    def compact(self) -> dict:
        """Compact the cold table's small files (one per ingest); rows, versions of rows and the sequence
        number are unchanged."""
        return self.cold.compact()
