"""The peer systems at scale: LiveVectorLake (Delta Lake cold tier + FAISS hot tier) and the SQLite
knowledge-graph SmartVector spec (kg_smartvector), configured as the benchmark configures them (``conf/``).

Rows (:class:`~.timing.Row`; nothing is asserted here):

LiveVectorLake (:func:`bench_livevectorlake`), indexed at ``serve_time`` = the latest query ``as_of``:

- ``ingest`` / ``livevectorlake``: ``seconds`` (whole ``index()``: every document version through the
  lake's per-document CDC, one Delta MERGE commit and one hot-tier persist per batch of ``ingest_batch``
  versions that changed something, real ``deltalake`` on real files in a temp dir), ``commits``,
  ``cold_ms`` / ``hot_ms`` (per commit, one row per commit), ``compact_s`` (the periodic compactions of the
  cold table, ``compact_every`` commits apart: without them every commit adds a small file and a MERGE's cost
  grows with their number, so a long history's ingest slows down commit after commit), ``cold_rows`` (rows in
  the Delta table);
- ``search_batch`` / ``livevectorlake_current``: every query asked "now" (``as_of`` = ``serve_time``, so
  the hot FAISS tier answers): ``batch_s`` per repetition and ``qps``;
- ``search_latency`` / ``livevectorlake_current``: ``query_ms`` one row per query (one query per call);
- ``search_batch`` / ``livevectorlake_asof``: the historical queries (``as_of`` before ``serve_time`` -
  ``current_tolerance_days``, routed to the cold tier) at their own ``as_of``;
- ``asof_latency`` / ``livevectorlake_asof``: ``query_ms`` (one row per query, through the retriever:
  lake query plus the mapping of hits back to corpus chunks), ``lake_query_ms`` (the lake's own
  ``query()`` time), ``outside_window`` and ``created_after_as_of`` (returned rows not valid at the
  query's ``as_of``: temporal leakage, a count), ``cold_routed_share``.

Query vectors are precomputed in the :class:`~smartvector_bench.tools.scale.ScaleData`: embedding is excluded.

kg_smartvector (:func:`bench_kg`), indexed at the same ``serve_time``:

- ``ingest`` / ``kg_smartvector``: ``seconds`` (SQLite file: entities, vectors, dependency rows, ripples);
- ``search_batch`` / ``kg_smartvector`` and ``plain_cosine`` (the benchmark's pure-cosine system on the same
  queries, for the spec's "within 2x of pure cosine" bar): ``batch_s``, ``qps``;
- ``search_latency`` / ``kg_smartvector`` and ``plain_cosine``: ``query_ms``.

kg_smartvector re-reads its SQLite state only when the database changed (``PRAGMA data_version`` and the
connection's ``total_changes``); the timed calls follow a warm-up call on an unchanged database, so they
exclude that read, which the first query after any write pays; it is reported on its own
(``state_read_ms``) because it grows with the store while a warm query does not pay it.
"""

from __future__ import annotations

import time

import numpy as np

from smartvector_bench.systems.kg_smartvector.retriever import KGSmartVector
from smartvector_bench.systems.livevectorlake.lake import LiveVectorLake
from smartvector_bench.systems.livevectorlake.retriever import LiveVectorLakeRetriever
from smartvector_bench.systems.plain_cosine import PlainCosine
from smartvector_bench.tools.scale import ScaleData
from smartvector_bench.tools.perf.systems import retriever_config
from smartvector_bench.tools.perf.timing import Row, per_query_latency, repeat, rows

K = 10


def serve_time_of(data: ScaleData) -> float:
    """The benchmark's serving time for a scaled dataset: the latest query ``as_of`` (as perf.search uses)."""
    return float(np.max(data.queries.as_of))


def _batch_and_latency(out: list[Row], system: str, n: int, mode: str, fn, n_q: int, reps: int,
                       n_latency: int, latency_case: str = "search_latency", note: str = "") -> None:
    """``fn(slice)`` answers the queries of the slice: batch of all ``n_q`` per repetition, then one by one."""
    if n_q == 0:
        return
    secs = repeat(lambda: fn(slice(0, n_q)), reps)
    out.extend(rows("search_batch", system, n, mode, "batch_s", secs, "s", note))
    out.extend(rows("search_batch", system, n, mode, "qps", [n_q / s for s in secs], "1/s", note))
    lat = per_query_latency(fn, min(int(n_latency), n_q))
    out.extend(rows(latency_case, system, n, mode, "query_ms", lat * 1000, "ms", note))


# -- LiveVectorLake ---------------------------------------------------------------------------------------------

def lvl_index(data: ScaleData, **overrides) -> tuple[LiveVectorLakeRetriever, float, list]:
    """The default livevectorlake retriever indexed at :func:`serve_time_of`; (retriever, seconds, per-commit
    timings ``[{cdc, cold, hot}]`` of the batches that wrote a commit; a batch's ``cdc`` covers its versions)."""
    r = LiveVectorLakeRetriever(**retriever_config("livevectorlake", **overrides))
    timings: list[dict] = []
    orig = LiveVectorLake.ingest_batch  # ingest_document is the batch of one, so every commit passes here

    def recording(self, *a, **kw):
        res = orig(self, *a, **kw)
        if res.seq is not None:
            timings.append(dict(res.timings_s))
        return res

    LiveVectorLake.ingest_batch = recording  # the class attribute is restored below, whatever happens
    try:
        t = time.perf_counter()
        r.index(data.corpus, data.corpus_vectors, serve_time_of(data))
        secs = time.perf_counter() - t
    finally:
        LiveVectorLake.ingest_batch = orig
    return r, secs, timings


def historical(r: LiveVectorLakeRetriever, as_of: np.ndarray) -> np.ndarray:
    """Indices of the queries the retriever routes to the cold tier as historical (as_of in the past)."""
    return np.nonzero(as_of < r.serve_time - r.s.current_tolerance_days)[0]


def leakage(data: ScaleData, ranked: np.ndarray, as_of: np.ndarray) -> dict[str, int]:
    """Returned corpus rows not valid at their query's ``as_of`` (window ``valid_from <= as_of < valid_to``)
    and rows created after it."""
    c = data.corpus
    q, col = np.nonzero(ranked >= 0)
    idx = ranked[q, col]
    t = as_of[q]
    return {"returned": len(idx),
            "outside_window": int(np.sum(~((c.valid_from[idx] <= t) & (t < c.valid_to[idx])))),
            "created_after_as_of": int(np.sum(c.created_at[idx] > t))}


def bench_livevectorlake(data: ScaleData, reps: int, n_latency: int, built: tuple | None = None) -> list[Row]:
    """``built``: the result of :func:`lvl_index` on ``data``, to reuse an index (default: built here)."""
    n, mode = len(data.corpus), data.vectors
    out: list[Row] = []
    r, secs, timings = lvl_index(data) if built is None else built
    try:
        info = r.describe()
        note = f"{info['ingest']['documents']} documents, {info['ingest']['versions']} versions"
        out += rows("ingest", "livevectorlake", n, mode, "seconds", [secs], "s", note)
        out += rows("ingest", "livevectorlake", n, mode, "commits", [len(timings)], "count", note)
        if timings:
            out += rows("ingest", "livevectorlake", n, mode, "cold_ms", [1000 * t["cold"] for t in timings], "ms",
                        f"one Delta MERGE commit per batch of {r.s.ingest_batch} document versions")
            out += rows("ingest", "livevectorlake", n, mode, "hot_ms", [1000 * t["hot"] for t in timings], "ms",
                        "FAISS update + atomic persist per commit")
        compact = [t["compact"] for t in timings if "compact" in t]
        if compact:
            out += rows("ingest", "livevectorlake", n, mode, "compact_s", [sum(compact)], "s",
                        f"{len(compact)} compactions of the cold table (compact_every={r.s.compact_every})")
        out += rows("ingest", "livevectorlake", n, mode, "cold_rows", [info["lake"]["cold_rows"]], "rows")

        qv = data.query_vectors
        as_of = np.asarray(data.queries.as_of, dtype=np.float64)
        now = np.full(len(qv), r.serve_time)
        _batch_and_latency(out, "livevectorlake_current", n, mode, lambda s: r.search(qv[s], now[s], K),
                           len(qv), reps, n_latency, note="as_of = serve_time: hot FAISS tier")

        hist = historical(r, as_of)
        hq, ht = qv[hist], as_of[hist]
        r._routing = dict.fromkeys(r._routing, 0)
        r._latency = {"hot": [], "cold": []}
        _batch_and_latency(out, "livevectorlake_asof", n, mode, lambda s: r.search(hq[s], ht[s], K), len(hq),
                           reps, n_latency, latency_case="asof_latency",
                           note=f"{len(hq)} historical queries: cold Delta tier, filtered by validity")
        routing = r._routing
        total = sum(routing.values())
        if total:
            out += rows("asof_latency", "livevectorlake_asof", n, mode, "cold_routed_share",
                        [routing["cold_historical"] / total], "share")
        if r._latency["cold"]:
            out += rows("asof_latency", "livevectorlake_asof", n, mode, "lake_query_ms",
                        1000 * np.asarray(r._latency["cold"][-min(int(n_latency), len(hq)):]), "ms",
                        "LiveVectorLake.query() alone (cold tier)")
        if len(hq):
            leak = leakage(data, r.search(hq, ht, K).ranked, ht)
            for key in ("outside_window", "created_after_as_of"):
                out += rows("asof_latency", "livevectorlake_asof", n, mode, key, [leak[key]], "count",
                            f"of {leak['returned']} returned rows")
    finally:
        if built is None:
            r.lake = None
    return out


# -- kg_smartvector ---------------------------------------------------------------------------------------------

def kg_index(data: ScaleData, **overrides) -> tuple[KGSmartVector, float]:
    r = KGSmartVector(**retriever_config("kg_smartvector", **overrides))
    t = time.perf_counter()
    r.index(data.corpus, data.corpus_vectors, serve_time_of(data))
    return r, time.perf_counter() - t


def bench_kg(data: ScaleData, reps: int, n_latency: int) -> list[Row]:
    n, mode = len(data.corpus), data.vectors
    out: list[Row] = []
    qv = data.query_vectors
    as_of = np.asarray(data.queries.as_of, dtype=np.float64)
    r, secs = kg_index(data)
    try:
        counts = r.kg.counts()
        out += rows("ingest", "kg_smartvector", n, mode, "seconds", [secs], "s",
                    f"{counts['entities']} entities, {counts['dependencies_depends_on']} depends_on, "
                    f"{r.n_ripples} ripples")
        _batch_and_latency(out, "kg_smartvector", n, mode, lambda s: r.search(qv[s], as_of[s], K), len(qv), reps,
                           n_latency, note="four signals; SQLite state re-read only after a write")
        out += rows("search_latency", "kg_smartvector", n, mode, "state_read_ms",
                    1000 * np.asarray(repeat(r._read_snapshot, reps)), "ms",
                    "reading the state back from SQLite (paid by the first query after any write)")
    finally:
        r.close()
    cos = PlainCosine(**retriever_config("plain_cosine"))
    cos.index(data.corpus, data.corpus_vectors, serve_time_of(data))
    _batch_and_latency(out, "plain_cosine", n, mode, lambda s: cos.search(qv[s], as_of[s], K), len(qv), reps,
                       n_latency, note="pure cosine (FAISS flat), the spec's 2x baseline")
    return out
