"""Search cost at one size: plain FAISS (flat, HNSW) against SmartVector's four-signal search, exhaustive and
re-ranking candidates, on the same query batch in the same process.

Systems (``system`` column):
- ``faiss_flat``: ``IndexFlatIP`` top-k by cosine: the baseline every ratio is taken against;
- ``faiss_hnsw``: ``IndexHNSWFlat`` top-k (approximate; ``recall_at_k`` against flat is reported);
- ``smartvector_exhaustive``: every vector scored with the four signals at each query's as_of (the default
  kernel, float32: a SIMD float32 pass, exact float64 re-score; ``search_profile`` rows say where its time
  goes); ``smartvector_exhaustive_numba``: the compiled float64 pass; ``smartvector_exhaustive_numpy``: numpy
  arrays, the specification's values bit for bit (up to 100K): the default's top k and scores are compared
  with it (``topk_identical``, ``scores_bit_identical``);
- ``smartvector_rerank``: FAISS flat top-C plus the per-as_of-group prior candidates, certified (queries the
  bound cannot certify are widened, then scored exhaustively) - exact up to float32 rounding of the cosine;
- ``smartvector_rerank_hnsw``: the same with HNSW candidates (no certification: approximate).

Measured: build seconds (once), batch seconds per repetition (and queries per second), single-query latency
(one row per query), top-1 agreement of every SmartVector mode with exhaustive scoring, and the time to
recompute the live confidence of every vector at a query's as_of (per query). Nothing is asserted here.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from smartvector_bench.core.index import FlatIndex, HNSWIndex
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.systems.smartvector.f32_kernel import exhaustive_top_k_f32, tile_products
from smartvector_bench.systems.smartvector.retriever import SmartVector
from smartvector_bench.systems.smartvector.scoring import columns
from smartvector_bench.tools.scale import ScaleData
from smartvector_bench.tools.perf.systems import retriever_config
from smartvector_bench.tools.perf.timing import Row, per_query_latency, repeat, rows

K = 10
NUMPY_MAX_SIZE = 100_000  # the numpy exhaustive path is also timed up to here (80 s a batch at 1M)


def smartvector(data: ScaleData, consolidation: dict | None = None, **search) -> tuple[SmartVector, float]:
    """The default smartvector retriever (search options overridden) indexed at the latest as_of; seconds."""
    cfg = retriever_config("smartvector", **search)
    if consolidation:
        cfg["consolidation"] = {**cfg["consolidation"], **consolidation}
    r = SmartVector(**cfg)
    t = time.perf_counter()
    r.index(data.corpus, data.corpus_vectors, float(np.max(data.queries.as_of)))
    return r, time.perf_counter() - t


def run_search(data: ScaleData, *, reps: int, n_latency: int, candidates: int, hnsw: dict,
               consolidation: dict | None = None, exhaustive: bool = True, hnsw_enabled: bool = True,
               progress=None) -> list[Row]:
    n, mode = len(data.corpus), data.vectors
    qv, as_of = data.query_vectors, np.asarray(data.queries.as_of, dtype=np.float64)
    nq = len(qv)
    out: list[Row] = []
    say = progress or (lambda msg: None)

    def batch(system: str, fn, note: str = "") -> None:
        secs = repeat(fn, reps)
        out.extend(rows("search_batch", system, n, mode, "batch_s", secs, "s", note))
        out.extend(rows("search_batch", system, n, mode, "qps", [nq / s for s in secs], "1/s", note))

    def latency(system: str, fn) -> None:
        lat = per_query_latency(fn, min(n_latency, nq))
        out.extend(rows("search_latency", system, n, mode, "query_ms", lat * 1e3, "ms"))

    # -- plain FAISS --------------------------------------------------------------------------------------------
    say(f"{n:,}: faiss flat")
    t = time.perf_counter()
    flat = FlatIndex(data.corpus_vectors)
    out += rows("build", "faiss_flat", n, mode, "seconds", time.perf_counter() - t, "s")
    batch("faiss_flat", lambda: flat.search(qv, K))
    latency("faiss_flat", lambda s: flat.search(qv[s], K))
    _, flat_ids = flat.search(qv, K)
    if hnsw_enabled:
        say(f"{n:,}: faiss hnsw (build)")
        t = time.perf_counter()
        hnsw_index = HNSWIndex(data.corpus_vectors, hnsw["m"], hnsw["ef_construction"], hnsw["ef_search"])
        out += rows("build", "faiss_hnsw", n, mode, "seconds", time.perf_counter() - t, "s")
        batch("faiss_hnsw", lambda: hnsw_index.search(qv, K))
        latency("faiss_hnsw", lambda s: hnsw_index.search(qv[s], K))
        _, ids = hnsw_index.search(qv, K)
        recall = np.mean([len(np.intersect1d(a[a >= 0], b)) / K for a, b in zip(ids, flat_ids)])
        out += rows("quality", "faiss_hnsw", n, mode, "recall_at_10_vs_flat", recall, "share")
        out += rows("memory", "faiss_hnsw", n, mode, "index_bytes_per_vector", hnsw_index.nbytes() / n, "B")
        del hnsw_index

    # -- SmartVector ----------------------------------------------------------------------------------------
    say(f"{n:,}: smartvector index (ingest + consolidation)")
    sv, secs = smartvector(data, consolidation)
    how = ("no consolidation" if consolidation and consolidation.get("enabled") is False else
           f"consolidation with ANN candidates k={consolidation['candidates']}" if consolidation else
           "consolidation with all pairs")
    out += rows("build", "smartvector", n, mode, "seconds", secs, "s", f"ingest + {how} + FAISS flat")
    out += _memory(sv, n, mode)
    base = sv.search_params
    reference = None
    if exhaustive:
        say(f"{n:,}: smartvector exhaustive")
        note = f"kernel={base.kernel}"
        batch("smartvector_exhaustive", lambda: sv.search(qv, as_of, K), note)
        latency("smartvector_exhaustive", lambda s: sv.search(qv[s], as_of[s], K))
        reference = sv.search(qv, as_of, K)
        out += rows("quality", "smartvector_exhaustive", n, mode, "uncertified_queries",
                    sv.last_search.get("uncertified_queries", 0), "queries", note)
        if base.kernel == "float32":
            out += _f32_profile(sv, qv, as_of, reps, n, mode)
        say(f"{n:,}: smartvector exhaustive, numba float64 kernel")
        sv.search_params = replace(base, kernel="numba")  # the compiled float64 pass, same run
        batch("smartvector_exhaustive_numba", lambda: sv.search(qv, as_of, K), "kernel=numba")
        out += _agreement("smartvector_exhaustive_numba", sv.search(qv, as_of, K), reference, n, mode,
                          "kernel=numba")
        if n <= NUMPY_MAX_SIZE:  # the specification's own values (numpy, bit-identical to score()), same run
            say(f"{n:,}: smartvector exhaustive, numpy kernel")
            sv.search_params = replace(base, kernel="numpy")
            batch("smartvector_exhaustive_numpy", lambda: sv.search(qv, as_of, K), "kernel=numpy")
            spec = sv.search(qv, as_of, K)
            out += _agreement("smartvector_exhaustive_numpy", spec, reference, n, mode, "kernel=numpy")
            out += _agreement("smartvector_exhaustive", reference, spec, n, mode, f"{note} vs the float64 spec")
            same = np.array_equal(reference.scores, spec.scores, equal_nan=True)
            out += rows("quality", "smartvector_exhaustive", n, mode, "scores_bit_identical", float(same), "share",
                        f"{note} vs the float64 spec")
        sv.search_params = base

    say(f"{n:,}: smartvector rerank C={candidates}")
    sv.search_params = replace(base, candidates=int(candidates))
    batch("smartvector_rerank", lambda: sv.search(qv, as_of, K), f"C={candidates}")
    latency("smartvector_rerank", lambda s: sv.search(qv[s], as_of[s], K))
    run = sv.search(qv, as_of, K)
    info = dict(sv.last_search)
    out += rows("rerank", "smartvector_rerank", n, mode, "fallback_queries", info.get("fallback_queries", 0),
                "queries", f"C={candidates}")
    out += rows("rerank", "smartvector_rerank", n, mode, "widened_queries", info.get("widened_queries", 0),
                "queries", f"C={candidates}")
    out += rows("rerank", "smartvector_rerank", n, mode, "scored_per_query", info.get("scored_per_query", 0.0),
                "vectors", f"C={candidates}")
    if reference is not None:
        out += _agreement("smartvector_rerank", run, reference, n, mode, f"C={candidates}")

    if hnsw_enabled:
        say(f"{n:,}: smartvector rerank on HNSW")
        hcfg = {"index": "hnsw", "hnsw_m": hnsw["m"], "hnsw_ef_construction": hnsw["ef_construction"],
                "hnsw_ef_search": hnsw["ef_search"]}
        sv.search_params = replace(base, candidates=int(candidates), **hcfg)
        sv.bind(sv.corpus, data.corpus_vectors, sv.store, sv.agent)  # same store, HNSW index
        batch("smartvector_rerank_hnsw", lambda: sv.search(qv, as_of, K), f"C={candidates}")
        latency("smartvector_rerank_hnsw", lambda s: sv.search(qv[s], as_of[s], K))
        if reference is not None:
            out += _agreement("smartvector_rerank_hnsw", sv.search(qv, as_of, K), reference, n, mode,
                              f"C={candidates}")
        sv.search_params = base
        sv.bind(sv.corpus, data.corpus_vectors, sv.store, sv.agent)

    # -- the live confidence, recomputed at each query's as_of ---------------------------------------------------
    say(f"{n:,}: confidence recomputation")
    m = min(nq, 64)
    secs = repeat(lambda: sv.store.live_confidence(as_of[:m]), reps)
    out += rows("confidence", "smartvector", n, mode, "per_query_ms", [s / m * 1e3 for s in secs], "ms",
                f"C(v, t) of all {n:,} vectors, {m} as_of times per call")
    sv.search_params = base
    return out


def _f32_profile(sv: SmartVector, qv: np.ndarray, as_of: np.ndarray, reps: int, n: int, mode: str) -> list[Row]:
    """Where the float32 exhaustive kernel's time goes, per batch: the BLAS products alone (its blocks, nothing
    else), and its steps (prepare the columns, scan = products + float32 scoring + selection, float64
    re-score), plus the scans run (more than one per as_of group: widened queries)."""
    stored = sv._index.stored()
    qf = np.ascontiguousarray(qv, dtype=np.float32)
    blas = repeat(lambda: tile_products(stored, qf), reps)
    steps: list[dict] = []
    for _ in range(reps):
        steps.append({})
        exhaustive_top_k_f32(sv, columns(sv), stored, qv, as_of, K, seconds=steps[-1])
    out = rows("search_profile", "smartvector_exhaustive", n, mode, "blas_products_s", blas, "s",
               "kernel=float32: the BLAS products of its blocks alone")
    for step in ("prepare", "scan", "rescore"):
        out += rows("search_profile", "smartvector_exhaustive", n, mode, f"{step}_s",
                    [d.get(step, 0.0) for d in steps], "s", "kernel=float32")
    return out + rows("search_profile", "smartvector_exhaustive", n, mode, "scans",
                      [d.get("scan_calls", 0) for d in steps], "passes", "kernel=float32: 1 per as_of group unless widened")


def _memory(sv: SmartVector, n: int, mode: str) -> list[Row]:
    """Resident per-vector state of SmartVector against its FAISS flat index (``metadata_bytes``), in total
    and column by column."""
    m = metadata_bytes(sv)
    lifecycle = sum(v for k, v in m["arrays"].items() if k.startswith(("store.", "retriever."))) + \
        m["edges"]["agent.edges"]
    per_column = [row for k, v in {**m["arrays"], **m["edges"]}.items()
                  for row in rows("memory", "smartvector", n, mode, f"bytes_per_vector.{k}", v / n, "B")]
    return (rows("memory", "faiss_flat", n, mode, "index_bytes_per_vector", m["index"] / n, "B")
            + rows("memory", "smartvector", n, mode, "metadata_bytes_per_vector", m["total"] / n, "B",
                   "every per-vector column the four-signal score reads (exact compact codes), and the edges "
                   "(packed CSR); the corpus's own columns are not counted")
            + per_column
            + rows("memory", "smartvector", n, mode, "metadata_share_of_index", m["ratio"], "share")
            + rows("memory", "smartvector", n, mode, "lifecycle_bytes_per_vector", lifecycle / n, "B",
                   "SmartVector's own state only: store columns, relational signal, found edges")
            + rows("memory", "smartvector", n, mode, "event_log_bytes_per_vector", event_log_bytes(sv.store) / n,
                   "B", "audit log and penalty ledger (columnar batches + single-record dicts; not on a query path)"))


def event_log_bytes(store) -> float:
    """Memory of the store's event log and penalty ledger (``ColumnLog.nbytes``: columnar batches' arrays, plus
    the single records kept as dicts, their values and list pointers)."""
    return float(store.events.nbytes() + store.penalties.nbytes())


def _agreement(system: str, run, reference, n: int, mode: str, note: str) -> list[Row]:
    same = run.top1 == reference.top1
    identical = (run.ranked == reference.ranked).all(axis=1)
    return (rows("quality", system, n, mode, "top1_agreement", float(same.mean()), "share", note)
            + rows("quality", system, n, mode, "topk_identical", float(identical.mean()), "share", note))


def rerank_agreement(retriever_cfg: dict, corpus: Corpus, vectors: np.ndarray, query_vectors: np.ndarray,
                     as_of: np.ndarray, cs, *, k: int = 10, serve_time: float | None = None,
                     name: str = "smartvector") -> dict:
    """Top-1 agreement of candidate re-ranking with exhaustive scoring, for each candidate count in ``cs``.

    The retriever is built from ``retriever_cfg`` (its other search options kept: prior candidates,
    certification, index), indexed once at ``serve_time`` (default: the latest as_of), and the same queries are
    searched exhaustively and then with ``candidates = C`` for each C. Returns the exhaustive search time and
    one row per C: share of queries whose top-1 is the same (both empty counts as the same), how many differ,
    whether the whole top-k is the same, the search time, and how many queries fell back to exhaustive."""
    cfg = dict(retriever_cfg)
    cfg["candidates"] = None
    r = SmartVector(name, **{k: v for k, v in cfg.items() if k != "_target_"})
    as_of = np.asarray(as_of, dtype=np.float64)
    r.index(corpus, vectors, float(np.max(as_of)) if serve_time is None else float(serve_time))
    base = r.search_params
    t = time.perf_counter()
    exact = r.search(query_vectors, as_of, k)
    exhaustive_s = time.perf_counter() - t
    rows = []
    for c in cs:
        r.search_params = replace(base, candidates=int(c))
        t = time.perf_counter()
        run = r.search(query_vectors, as_of, k)
        secs = time.perf_counter() - t
        same = run.top1 == exact.top1
        rows.append({"candidates": int(c), "top1_agreement": float(same.mean()) if len(same) else 1.0,
                     "n_differ": int((~same).sum()), "n_queries": int(len(same)),
                     "topk_identical": float((run.ranked == exact.ranked).all(axis=1).mean()) if len(same) else 1.0,
                     "search_s": secs, "fallback_queries": r.last_search.get("fallback_queries", 0),
                     "faiss_s": r.last_search.get("faiss_seconds")})
    r.search_params = base
    return {"exhaustive_s": exhaustive_s, "n_vectors": len(corpus), "rows": rows}


def metadata_bytes(retriever: SmartVector) -> dict:
    """Memory of SmartVector's per-vector state against the FAISS index's: what the four-signal search reads
    per vector and what stays resident between searches.

    ``arrays``: the store's columns (``VectorStore.nbytes_by_column``: exact compact codes and their tables for
    its own copies of authority / created_at / valid_from / valid_to and for its ingest, feedback, access,
    validation, penalty, deprecation and archive columns; int8 status; int32 superseded_by) and the retriever's
    cached relational signal R (computed here when no search has cached it yet, as the first search would);
    ``edges``: the dependency edges the agent holds (given and detected, unique, a CSR in the fewest whole
    bytes: ``compact.PackedRagged``), from which R and the ripple are derived. ``total`` is their sum. ``index``: the FAISS index (flat: ntotal * d * 4; HNSW adds
    its links). The per-search float64 columns (``scoring.Columns``) are transient and not counted.

    ``not_counted`` lists, for the reader, what is resident but outside the total: the corpus's own columns
    (the document store every system is served from; the search reads the store's copies) and the agent's
    once-per-vector edge flag. The agent's other working state (judged pairs, candidate pairs, word sets) and
    the event log (``event_log_bytes``) are not read by a search either and are not listed."""
    n = len(retriever.corpus)
    arrays = {f"store.{k}": v for k, v in retriever.store.nbytes_by_column().items()}
    retriever.relational()
    arrays["retriever.relational"] = int(retriever._relational.nbytes)
    agent, c = retriever.agent, retriever.corpus
    edges = {"agent.edges": agent.edges.nbytes}
    total = sum(arrays.values()) + sum(edges.values())
    not_counted = {f"corpus.{a}": int(getattr(c, a).nbytes)
                   for a in ("authority", "created_at", "valid_from", "valid_to", "supersedes")}
    not_counted["corpus.depends_on"] = int(c.depends_on.indptr.nbytes + c.depends_on.indices.nbytes)
    not_counted["agent.edges_seen"] = int(agent.edges_seen.nbytes)
    index = retriever._index.nbytes()
    return {"n_vectors": n, "arrays": arrays, "edges": edges, "total": int(total),
            "per_vector": total / max(n, 1), "index": int(index), "index_kind": retriever._index.kind,
            "ratio": total / index if index else float("inf"), "not_counted": not_counted}
