"""Filtered ANN at scale (issue 32, item 4): recall@10 of the exact filtered top-10 and per-query latency of
approximate indexes when most vectors are superseded, every system on the same data and queries in one run.

Data (:mod:`.filtered_data`): the scale data's vectors as documents with V versions each (a version is a
perturbation of its predecessor), only the latest in force, V = 2, 10, 100 (50%, 90%, 99% superseded); the
filter is the as-of predicate at "now". Ground truth: FAISS ``IndexFlatIP`` over the in-force vectors only.

Systems (``system`` column; ``_k<k'>`` names the candidates asked for):
- ``faiss_flat``: the ground truth's index, timed: the baseline of every latency ratio;
- ``faiss_hnsw_post_k<k'>``: ``IndexHNSWFlat`` top-k' (efSearch ``max(ef_search, k')``), then the filter; the
  first 10 in force are its answer (``short_queries``: queries left with fewer than 10);
- ``faiss_hnsw_unfiltered``: the same graph with no filter, recall against the unfiltered exact top-10 (the
  graph's own accuracy on this data, before any filter; no latency);
- ``faiss_hnsw_idselector_ef<ef>``: the same graph searched with ``SearchParametersHNSW(sel=IDSelectorBitmap)``
  (the filter applied during the graph walk), efSearch ``ef``;
- ``lancedb_prefilter`` / ``lancedb_postfilter_k<k'>``, ``milvus_lite``, ``chroma``: :mod:`.filtered_stores`;
- ``smartvector_rerank_k<C>``: SmartVector's certified re-rank (``candidates: C``, FAISS flat candidates) with
  cosine as its only signal (``weights: semantic_only``) and its status rules as the in-force mask (superseded
  = DEPRECATED, excluded; dormancy ignored): its key is then the cosine of an in-force vector, so its top 10 is
  the exact filtered top 10 whenever the bound certifies it, and a query the bound cannot certify is widened
  or scored exhaustively (``fallback_queries``, ``widened_queries``).

Measured per system: ``recall_at_10`` (mean over queries), ``short_queries``, ``query_ms`` (one row per call:
every query once per repetition, one query per call as an application serves them, after a warm-up call; the
median and p05-p95 are over calls), ``n_queries`` and ``build_s``. A system whose calls cost about a second at a
size answers only the first ``query_caps[system][size]`` queries there (SmartVector at 1M: it rebuilds its
bound blocks, O(N log N), on every call). A store above its ``max_size`` is not built: one
``skipped`` row gives the build rate measured at a smaller size in this run and the time it projects.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import replace
from pathlib import Path

import faiss
import numpy as np

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.smartvector.retriever import SmartVector
from smartvector_bench.tools.perf.filtered_data import (
    K, ExactFiltered, Versioned, first_in_force, recall_at_k, short_of, versioned_data,
)
from smartvector_bench.tools.perf.filtered_stores import STORES, available
from smartvector_bench.tools.perf.systems import retriever_config
from smartvector_bench.tools.perf.timing import Row, rows
from smartvector_bench.tools.scale import ScaleData

CASE = "filtered_ann"
# What a section leaves out (``python -m smartvector_bench.tools.perf.cases filtered_ann -n N`` gives only reps,
# n_queries and the other cases' keys): FAISS and SmartVector only, no external store.
DEFAULTS = {"superseded": [0.5, 0.9, 0.99], "n_queries": 200, "reps": 1, "k_prime": [10, 100, 1000],
            "idselector_ef": [128], "hnsw": {"m": 16, "ef_construction": 64, "ef_search": 128}, "query_caps": {},
            "stores": {}}
# Build rates measured in this process, per (store, versions): {size: vectors per second}, for the skip rows
# of larger sizes (the runner runs a section's sizes in the order listed, increasing in both profiles, in one
# process; a size above max_size with no smaller build in the process says so instead).
_RATES: dict[tuple[str, int], dict[int, float]] = {}


def _say(msg: str) -> None:
    print(f"[perf {time.strftime('%H:%M:%S')}] {CASE}: {msg}", flush=True)


def versions_of(share: float) -> int:
    """V with a superseded share ``1 - 1/V`` equal to ``share`` (0.5, 0.9, 0.99 -> 2, 10, 100)."""
    v = int(round(1.0 / (1.0 - float(share))))
    if v < 2 or abs(1.0 - 1.0 / v - float(share)) > 1e-9:
        raise BenchError(f"filtered_ann.superseded: {share!r} is not 1 - 1/V for a whole V >= 2 (0.5, 0.9, 0.99)")
    return v


class Timed:
    """One system's answers and timing: every query once per repetition, one query per call, each call timed
    (the spread is over calls: queries differ in how far a filtered search has to look)."""

    def __init__(self, d: Versioned, truth: np.ndarray, mask: np.ndarray, reps: int):
        self.d, self.truth, self.mask, self.reps = d, truth, mask, reps
        self.out: list[Row] = []

    def run(self, system: str, answer, note: str = "", build_s: float | None = None, filtered: bool = True,
            n_queries: int | None = None) -> np.ndarray:
        """Rows of ``system``; ``answer(i)`` gives query i's ranked rows (-1 padded), post-filtered here unless
        ``filtered`` (the system applied the filter itself: its results are checked to be in force). Only the
        first ``n_queries`` queries if given (a system too slow per call for all of them at this size)."""
        d = self.d
        nq = len(d.queries) if n_queries is None else min(int(n_queries), len(d.queries))
        answer(0)  # warm-up: caches, lazy loads
        calls, found = np.empty((self.reps, nq)), None
        for r in range(self.reps):
            got = []
            for i in range(nq):
                t = time.perf_counter()
                got.append(answer(i))
                calls[r, i] = time.perf_counter() - t
            found = found if found is not None else np.stack(got)  # every pass answers the same
        top = found[:, :K] if filtered else first_in_force(found, self.mask)
        if filtered and not self.mask[top[top >= 0]].all():
            raise AssertionError(f"{system}: returned a superseded row under the in-force filter")
        n, label = len(d), d.label
        self.out += rows(CASE, system, n, label, "recall_at_10", recall_at_k(top, self.truth[:nq]).mean(), "share",
                         note)
        self.out += rows(CASE, system, n, label, "n_queries", nq, "queries", note)
        self.out += rows(CASE, system, n, label, "short_queries", short_of(top), "queries", note)
        self.out += rows(CASE, system, n, label, "query_ms", calls.ravel() * 1e3, "ms", note)
        if build_s is not None:
            self.out += rows(CASE, system, n, label, "build_s", build_s, "s", note)
        return top


def _hnsw(d: Versioned, c: dict, timed: Timed) -> None:
    h = c["hnsw"]
    t = time.perf_counter()
    index = faiss.IndexHNSWFlat(d.vectors.shape[1], int(h["m"]), faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = int(h["ef_construction"])
    index.add(d.vectors)
    build = time.perf_counter() - t
    graph = f"IndexHNSWFlat M={h['m']} efConstruction={h['ef_construction']}"
    qs = d.queries
    # The graph's own accuracy with no filter (against the unfiltered exact top 10): what is lost before any filter
    flat = faiss.IndexFlatIP(d.vectors.shape[1])
    flat.add(d.vectors)
    _, exact = flat.search(qs, K)
    del flat
    _, approx = index.search(qs, K, params=faiss.SearchParametersHNSW(efSearch=int(h["ef_search"])))
    timed.out += rows(CASE, "faiss_hnsw_unfiltered", len(d), d.label, "recall_at_10",
                      recall_at_k(approx, exact).mean(), "share",
                      f"{graph}, efSearch {h['ef_search']}, no filter: recall@10 against the unfiltered exact top-10")
    for kp in c["k_prime"]:
        params = faiss.SearchParametersHNSW(efSearch=max(int(h["ef_search"]), int(kp)))
        timed.run(f"faiss_hnsw_post_k{kp}", lambda i: index.search(qs[i:i + 1], int(kp), params=params)[1][0],
                  f"{graph}, efSearch max({h['ef_search']}, k'), then the filter", build, filtered=False)
    bits = np.packbits(timed.mask, bitorder="little")  # IDSelectorBitmap reads bit i of byte i >> 3, LSB first
    sel = faiss.IDSelectorBitmap(len(timed.mask), faiss.swig_ptr(bits))
    for ef in c["idselector_ef"]:
        params = faiss.SearchParametersHNSW(sel=sel, efSearch=int(ef))
        timed.run(f"faiss_hnsw_idselector_ef{ef}", lambda i: index.search(qs[i:i + 1], K, params=params)[1][0],
                  f"{graph}, efSearch ef, IDSelectorBitmap of the in-force rows", build)
    del index


def versioned_corpus(d: Versioned) -> Corpus:
    """The columns SmartVector reads (times, supersession; no texts, no edges: consolidation is off)."""
    n = len(d)
    ids = [str(i) for i in range(n)]
    empty = [""] * n
    valid_to = np.where(d.version == d.versions - 1, np.inf, d.valid_to)
    return Corpus(ids=ids, titles=empty, texts=empty, doc_id=d.doc.astype(str).astype(object),
                  version=d.version + 1, source=np.full(n, "synthetic", dtype=object), authority=np.ones(n),
                  created_at=d.valid_from.copy(), valid_from=d.valid_from.copy(), valid_to=valid_to,
                  depends_on=Ragged(np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)),
                  supersedes=d.supersedes(), offset_start=np.zeros(n, dtype=np.int64),
                  offset_end=np.zeros(n, dtype=np.int64), index_of=dict(zip(ids, range(n))))


def query_cap(c: dict, family: str, n: int) -> int | None:
    """``query_caps[family]`` (``{size: queries}``): the queries a slow system answers at size n (None: all)."""
    caps = (c.get("query_caps") or {}).get(family) or {}
    return int(caps[n]) if n in caps else int(caps[str(n)]) if str(n) in caps else None


def _smartvector(d: Versioned, c: dict, timed: Timed) -> None:
    cfg = retriever_config("smartvector", weights={"semantic": 1.0, "temporal": 0.0, "confidence": 0.0,
                                                   "relational": 0.0},
                           dormant="include", consolidation={"enabled": False}, candidates=int(c["k_prime"][0]))
    sv = SmartVector(**cfg)
    t = time.perf_counter()
    sv.index(versioned_corpus(d), d.vectors, d.now)
    build = time.perf_counter() - t
    base, now = sv.search_params, np.array([d.now])
    for kp in c["k_prime"]:
        sv.search_params = replace(base, candidates=int(kp))
        cap = query_cap(c, "smartvector_rerank", len(d))
        counts = np.zeros((len(d.queries) if cap is None else min(cap, len(d.queries)), 2))  # fallback, widened

        def answer(i: int) -> np.ndarray:
            run = sv.search(d.queries[i:i + 1], now, K)
            counts[i] = sv.last_search.get("fallback_queries", 0), sv.last_search.get("widened_queries", 0)
            return run.ranked[0]

        system = f"smartvector_rerank_k{kp}"
        note = f"certified re-rank, C={kp} FAISS flat candidates, weights semantic only, superseded excluded"
        timed.run(system, answer, note, build, n_queries=cap)
        for j, metric in enumerate(("fallback_queries", "widened_queries")):
            timed.out += rows(CASE, system, len(d), d.label, metric, counts[:, j].sum(), "queries", note)
    sv.search_params = base


def _store(name: str, d: Versioned, c: dict, timed: Timed, scratch: Path) -> None:
    s = c["stores"][name]
    why = available(name)
    if why:
        timed.out += rows(CASE, name, len(d), d.label, "skipped", np.nan, "s", why)
        return
    store = STORES[name](scratch / name, **s)
    try:
        _say(f"{len(d):,} vectors, {d.superseded_share:g} superseded: {name} (build)")
        build = store.build(d)
        _RATES.setdefault((name, d.versions), {})[len(d)] = len(d) / build
        qs, t = d.queries, d.now
        if name == "lancedb":
            timed.run("lancedb_prefilter", lambda i: store.search(qs[i], t, K, prefilter=True),
                      f"{store.describe()}; prefilter", build)
            for kp in c["k_prime"]:
                timed.run(f"lancedb_postfilter_k{kp}", lambda i: store.search(qs[i], t, int(kp), prefilter=False),
                          f"{store.describe()}; postfilter, limit k'", build)
        else:
            timed.run(name, lambda i: store.search(qs[i], t, K), store.describe(), build)
    finally:
        store.close()


def skip_note(name: str, n: int, cap: int, shares: list[float]) -> tuple[float, str]:
    """(projected build seconds at n over every share, the one-line reason) for a store above its max_size."""
    seen = [(v, size, rate) for (store, v), by_size in _RATES.items() if store == name
            for size, rate in by_size.items() if size <= cap]
    if not seen:
        return np.nan, f"not run above {cap:,} vectors (max_size; no smaller build in this run to project from)"
    size = max(s for _, s, _ in seen)
    rates = [r for _, s, r in seen if s == size]
    rate = float(np.mean(rates))
    per_share = n / rate
    return per_share * len(shares), (
        f"not run at {n:,}: built {size:,} vectors at {rate:,.0f} vectors/s (mean of {len(rates)} shares, this run); "
        f"{n:,} would take about {per_share / 60:,.0f} min per share, {per_share * len(shares) / 60:,.0f} min for "
        f"{len(shares)} (at least: an HNSW build grows faster than N)")


def bench_filtered_ann(data: ScaleData, c: dict, n: int, cfg: dict) -> list[Row]:
    """The case at size n, every superseded share of ``c["superseded"]``: rows for every system."""
    c = {**DEFAULTS, **c}
    seed, shares = int(cfg.get("seed", 0)), [float(s) for s in c["superseded"]]
    stores = c.get("stores") or {}
    out: list[Row] = []
    for name, s in stores.items():
        if n > int(s["max_size"]):
            est, why = skip_note(name, n, int(s["max_size"]), shares)
            out += rows(CASE, name, n, "synthetic", "skipped", est, "s", why)
    for share in shares:
        v = versions_of(share)
        if n % v or n // v > len(data.corpus_vectors):
            raise BenchError(f"filtered_ann: {n:,} vectors is not a whole number of documents of {v} versions")
        d = versioned_data(data.corpus_vectors[: n // v], v, int(c["n_queries"]), seed)
        mask = d.in_force()
        _say(f"{n:,} vectors, {share:g} superseded ({v} versions, {int(mask.sum()):,} in force): exact, faiss")
        t = time.perf_counter()
        exact = ExactFiltered(d.vectors, mask)
        build = time.perf_counter() - t
        truth = exact.search(d.queries)
        timed = Timed(d, truth, mask, int(c["reps"]))
        timed.run("faiss_flat", lambda i: exact.search(d.queries[i:i + 1])[0],
                  "exact filtered: IndexFlatIP over the in-force vectors only (the ground truth)", build)
        _hnsw(d, c, timed)
        _say(f"{n:,} vectors, {share:g} superseded: smartvector")
        _smartvector(d, c, timed)
        with tempfile.TemporaryDirectory(prefix="svb-filtered-") as tmp:
            for name, s in stores.items():
                if n <= int(s["max_size"]):
                    _store(name, d, c, timed, Path(tmp))
        out += timed.out
        del d, exact, timed
    return out
