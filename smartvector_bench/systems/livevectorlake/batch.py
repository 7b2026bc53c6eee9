"""LiveVectorLake's CDC over a batch of document versions, planned in memory before anything is written.

:func:`plan_batch` runs the per-version CDC of :meth:`LiveVectorLake.ingest_document` (see :mod:`.lake`) on each
version of a batch in order, against an overlay of the lake's per-document state: a document that appears
several times in one batch sees its own earlier versions from the batch, exactly as if they had been ingested
one by one. Nothing in the lake changes here; the lake writes the plan as ONE cold-tier commit and ONE hot-tier
update (:meth:`LiveVectorLake.ingest_batch`), so a version that fails (out of time order, a bad vector shape)
fails the whole batch before any write.

**Rows opened and closed in the same batch.** A row that a version of the batch adds and a later version of
the same batch closes never existed in the table, so the MERGE cannot update it: the plan inserts it already
closed (``valid_to``, ``status`` and ``change_type`` as the closing version set them), and it never enters the
hot tier. ``closes`` holds only rows that were open before the batch (matched and updated by the MERGE),
``adds`` every row the batch opens (inserted), so the table after the commit equals the table after ingesting
the versions one by one. No key can be both: a row's key holds its ``valid_from``, the effective time of the
version that opened it, and a document's versions come in strictly increasing effective time.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.livevectorlake.cold import INF_US, Close, Row, RowKey, iso, to_us, us_to_days
from smartvector_bench.systems.livevectorlake.rows import IngestResult, Time, closing_rows, position_classes
from smartvector_bench.systems.updates import Chunker, DocumentStore, cdc
from smartvector_bench.systems.updates.cdc import CLASSES

VectorsFor = Callable[[Sequence[str]], np.ndarray]


class BatchItem(NamedTuple):
    """One document version of a batch (the arguments of :meth:`LiveVectorLake.ingest_document`)."""

    doc_id: str
    version: int
    text: str
    effective_at: Time
    vectors_for: VectorsFor


@dataclass
class DocState:
    rows: list[Row]  # current rows, by position
    store: DocumentStore  # the same paragraphs, as cdc.apply's input
    last_effective_us: int  # latest time a row of this document opened or closed (or a no-op version came)


@dataclass
class BatchResult:
    """What one :meth:`LiveVectorLake.ingest_batch` did: one :class:`IngestResult` per version, in order.

    ``seq`` and ``cold_version`` are the batch's commit (None / the table version before, when no version
    changed anything); every version that wrote rows carries the same ``seq``. ``timings_s``: the batch's
    ``cdc`` (all versions), ``cold`` (the one commit), ``hot`` (the one hot-tier update) and ``compact`` when
    the commit triggered a compaction. Each version's own ``timings_s`` holds its ``cdc`` time and an even share
    of the batch's ``cold`` and ``hot`` time among the versions that wrote rows (amortised; a batch of one
    gets the whole)."""

    results: list[IngestResult]
    seq: int | None
    cold_version: int
    rows_closed: int  # rows open before the batch that its commit closed
    rows_added: int  # rows its commit inserted (closed_in_batch of them already closed)
    closed_in_batch: int  # rows opened and closed again within the batch (never in the hot tier)
    timings_s: dict[str, float] = field(default_factory=dict)


@dataclass
class BatchPlan:
    results: list[IngestResult]
    closes: list[Close]  # rows open before the batch that it closes (MERGE: matched, updated)
    adds: list[Row]  # rows the batch opens, in version order; some already closed (MERGE: inserted)
    docs: dict[str, DocState]  # the new state of every document the batch touched
    horizon_us: int | None  # latest effective time of a version that wrote rows
    info: dict  # the commit's metadata

    @property
    def live(self) -> list[Row]:
        """The added rows still open at the end of the batch: the hot tier's additions."""
        return [r for r in self.adds if r.valid_to >= INF_US]


def close_opened(row: Row, close: Close) -> None:
    """Fold ``close`` into ``row``, opened earlier in the same batch: the row is inserted already closed, with the
    values the MERGE would have set on it (``valid_to``, ``status``, ``change_type``)."""
    row.valid_to, row.status, row.change_type = close.valid_to, close.status, close.change_type


def plan_batch(docs: Mapping[str, DocState], items: Iterable[BatchItem], chunker: Chunker, dim: int,
               cold_version: int) -> BatchPlan:
    """The CDC of every version of the batch, in order, against ``docs`` (the lake's state; not modified)."""
    overlay: dict[str, DocState] = {}
    opened: dict[RowKey, Row] = {}  # rows added by this batch, by key (their closes are folded in)
    closes: list[Close] = []
    adds: list[Row] = []
    results: list[IngestResult] = []
    written: list[tuple[IngestResult, int]] = []  # the versions that wrote rows, with their time in microseconds
    horizon: int | None = None
    for item in items:
        item = BatchItem(*item)
        doc_id = item.doc_id
        doc = overlay.get(doc_id, docs.get(doc_id))
        result, state, v_closes, v_adds = _version(doc, item, chunker, dim, cold_version)
        results.append(result)
        if state is not None:
            overlay[doc_id] = state
        if not v_closes and not v_adds:
            continue
        written.append((result, state.last_effective_us))
        horizon = state.last_effective_us if horizon is None else max(horizon, state.last_effective_us)
        for c in v_closes:
            row = opened.pop(c.key, None)
            if row is None:
                closes.append(c)
            else:  # opened earlier in this batch: insert it already closed (the MERGE cannot match it)
                close_opened(row, c)
        for r in v_adds:
            opened[r.key] = r
            adds.append(r)
    info: dict = {"versions": len(written), "documents": len({r.doc_id for r, _ in written}),
                  "classes": {c: sum(r.classes[c] for r, _ in written) for c in CLASSES},
                  "embedded": sum(r.embedded for r, _ in written)}
    if len(written) == 1:  # the per-version commit metadata, as one ingest_document has always written it
        (r, t_us), = written
        info = {"doc_id": r.doc_id, "version": r.version, "effective_at": iso(t_us), "classes": r.classes,
                "embedded": r.embedded}
    return BatchPlan(results, closes, adds, overlay, horizon, info)


def _version(doc: DocState | None, item: BatchItem, chunker: Chunker, dim: int, cold_version: int
             ) -> tuple[IngestResult, DocState | None, list[Close], list[Row]]:
    """One version's CDC: its result, the document's new state (None: still unknown), the rows it closes and
    the rows it adds."""
    doc_id, version, text = item.doc_id, item.version, item.text
    if not isinstance(doc_id, str) or not doc_id:
        raise BenchError(f"doc_id={doc_id!r}: must be a non-empty string")
    if not isinstance(text, str):
        raise BenchError(f"{doc_id}: text must be a string")
    t0 = time.perf_counter()
    t_us = to_us(item.effective_at)
    if doc is not None and t_us <= doc.last_effective_us:
        raise BenchError(f"{doc_id} v{version}: effective_at {iso(t_us)} is not after the document's last "
                         f"change {iso(doc.last_effective_us)}; ingest a document's versions in time order")

    embedded: list[str] = []

    def embed(texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        embedded.extend(texts)
        out = np.asarray(item.vectors_for(texts), dtype=np.float32)
        if out.shape != (len(texts), dim):
            raise BenchError(f"{doc_id} v{version}: vectors_for returned shape {out.shape}, "
                             f"expected {(len(texts), dim)}")
        return out

    old_rows = doc.rows if doc is not None else []
    old_hashes = [r.chunk_id for r in old_rows]
    if old_rows:
        store = doc.store.copy()  # applied to a copy: the lake's state changes only once the cold commit is in
        counts = cdc.apply(store, text, embed).classes
    else:
        store = DocumentStore.build(doc_id, text, chunker, embed, dim=dim)
        counts = dict.fromkeys(CLASSES, 0)
        counts["new"] = len(store.chunks)
    classes = position_classes(old_hashes, store.hashes)
    got = Counter(classes)
    if any(got.get(c, 0) != counts[c] for c in CLASSES if c != "deleted"):
        raise RuntimeError(f"{doc_id} v{version}: per-position classes {dict(got)} disagree with cdc {counts}")

    closes = closing_rows(old_rows, classes, store.hashes, t_us)
    rows: list[Row] = []
    adds: list[Row] = []
    for i, (chunk, cls) in enumerate(zip(store.chunks, classes)):
        if cls == "unchanged":
            rows.append(old_rows[i])
            continue
        row = Row(doc_id=doc_id, chunk_id=store.hashes[i], position=i, text=chunk.text,
                  embedding=store.vectors[i].copy(), valid_from=t_us, version_number=int(version),
                  parent_hash=old_hashes[i] if i < len(old_hashes) else None, change_type=cls)
        rows.append(row)
        adds.append(row)
    result = IngestResult(doc_id=doc_id, version=int(version), effective_at=us_to_days(t_us), seq=None,
                          classes=counts, position_classes=classes, n_paragraphs=len(store.chunks),
                          embedded=len(embedded), rows_added=len(adds), rows_closed=len(closes),
                          rows_deleted=sum(c.status == "deleted" for c in closes), cold_version=cold_version)
    result.timings_s = {"cdc": time.perf_counter() - t0, "cold": 0.0, "hot": 0.0}
    if not closes and not adds:  # identical version: nothing to write, the document's state keeps its rows
        if doc is None:  # an empty first version: nothing to remember either (as one ingest_document did)
            return result, None, closes, adds
        return result, DocState(doc.rows, doc.store, t_us), closes, adds
    return result, DocState(rows, store, t_us), closes, adds
