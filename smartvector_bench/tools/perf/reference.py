"""The paper's own code (PyPI ``smartvector-rag`` 0.1.1, driven by :mod:`smartvector_bench.systems.smartvector_ref`) at scale,
side by side with our ``smartvector`` retriever on the same queries in the same process.

:func:`bench_reference` builds ``smartvector_ref`` from the benchmark's own config (``conf/retriever``, composed
with Hydra: schedule ``before_each_ingest``, include_dormant false, ...) and indexes the scaled corpus at
``serve_time`` = the latest query ``as_of`` (as :mod:`.search` and :mod:`.peers` do). Then the first
``n_queries`` queries (their texts: the package ranks by keyword overlap and ignores the query vectors) go to
both systems.

What is measured, and the one bound. With the benchmark's schedule the package's consolidation agent runs
before every batch of chunks sharing a creation time (one run per distinct creation time) and each run
compares all pairs twice in Python (``ConflictDetector.detect_conflicts``: word Jaccard + difflib ratio on
every ACTIVE / UNCONSOLIDATED pair; ``RelationshipBuilder.build_relationships``: word Jaccard on every
non-archived pair). Quadratic work in pure Python, repeated once per creation time, makes the faithful ingest
unaffordable at any size worth reporting (docs/operations.md, Performance, keeps what it cost). For ``ingest`` and the search cases the retriever therefore runs exactly as configured except that, during
``index()`` only, those two all-pairs passes return no conflicts and no relationships
(:func:`linear_consolidation`); every other step of every run (dormancy at the batch time, ripples, promotion
UNCONSOLIDATED -> ACTIVE, and so the package's own supersession at ingest) runs as shipped. The bound leaves
the query's work as it is: the query cost depends on the number of vectors it scores, which dormancy and
supersession decide, not on the edges. What the bound leaves out (edges, so the relational bonus and ripples
along them, and conflict marks) changes scores, not the per-vector work of a query (one more ``log`` and a
short loop over ``contradictions``).

The all-pairs cost is measured on its own (case ``consolidation``): ONE full run of the package's
consolidation, as shipped, at ``serve_time`` on the first ``min(N, CONSOLIDATION_MAX)`` chunks freshly
ingested (the retriever with ``consolidation_schedule=serve_time_only``; :func:`corpus_prefix`: the first M
rows of a scaled build equal a build of M rows), with the two passes timed separately. The relationship pass
grows with the square of the chunks ingested, the conflict pass with the square of those still ACTIVE after
the run's dormancy step (difflib on every pair is the dominant cost).

Search is timed through the retriever's ``search`` (package ``db.query`` under the frozen clock, plus mapping
the hits back to corpus rows) with its store-fingerprint check switched off: that check (built twice per
call, O(N) Python tuples) is the benchmark's own audit, not the package, and would inflate every query by a
cost that grows with N (it is reported on its own as ``fingerprint_ms``). One untimed full batch runs first with the check on
(so the package's query is verified not to change the store) and serves as the warm-up.

Rows (:class:`~.timing.Row`; nothing asserted here), ``n_vectors`` = N unless said:

- ``ingest`` / ``smartvector_ref``: ``seconds`` (whole ``index()``, bounded as above), ``consolidation_runs``,
  ``consolidation_linear_s`` (time inside the runs), ``ingested`` (chunks created by ``serve_time``),
  ``status_active`` / ``status_dormant`` / ``status_deprecated`` (after the last run: only ACTIVE vectors are
  scored by a query, the others are skipped in its Python loop);
- ``consolidation`` / ``smartvector_ref`` (``n_vectors`` = M): ``seconds`` (the one full run),
  ``conflicts_s``, ``relationships_s``, ``ingested``;
- ``search_latency`` / ``smartvector_ref`` and ``smartvector``: ``query_ms``, one row per query (one query per
  call), ``n_queries`` rows each; ``smartvector_ref`` also ``fingerprint_ms`` (the check left out);
- ``search_batch`` / ``smartvector_ref`` and ``smartvector``: ``batch_s`` per repetition and ``qps``, all
  ``n_queries`` queries per call (our smartvector repeats at least ``SV_MIN_REPS`` times: milliseconds each);
- ``ingest`` / ``smartvector``: ``seconds`` (its ``index()``: ingest + one consolidation run + FAISS flat);
- ``search_batch`` / ``smartvector_rerank_vs_ref``: the same index searched in the certified re-ranking mode
  (``candidates`` C), and ``quality`` / ``top1_agreement`` with the exhaustive default on these queries.

The throughput ratio (target T6, >= 100x at 10K) is our faster exact mode's qps / smartvector_ref qps within
one run (:mod:`.targets`; both modes are reported).

Sizes. ``python -m smartvector_bench.tools.perf.reference -n 500 1000 2000 5000 10000 --queries 100 --reps 3``
runs this module on ``scale_dataset(n, n_queries=100)`` at each size and prints the medians; the full
consolidation is one run as shipped on the first ``--consolidation-max`` chunks. The package's query cost grows
with the number of ACTIVE vectors it scores (a Python loop), and dormancy at the batch times decides how many,
so its throughput falls as N grows. The bounded reference is affordable at 10,000,
the issue's target size; the full consolidation is not, hence ``CONSOLIDATION_MAX``.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace

import numpy as np

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.systems import smartvector_ref as ref_module
from smartvector_bench.systems.smartvector.retriever import SmartVector
from smartvector_bench.systems.smartvector_ref import SmartVectorRef
from smartvector_bench.tools.scale import ScaleData, scale_dataset
from smartvector_bench.tools.perf.systems import retriever_config
from smartvector_bench.tools.perf.timing import Row, per_query_latency, repeat, rows, timing_stats

K = 10
SYSTEM = "smartvector_ref"
OURS = "smartvector"
OURS_RERANK = "smartvector_rerank_vs_ref"  # its own name: the search case has smartvector_rerank at 10K too
# `make bench` runs the reference at 10,000 chunks, the target size, and `make bench-quick` at 500, a
# size that exercises every step in seconds (conf/bench_profile/{full,quick}.yaml).
FULL_SIZES = (10_000,)
QUICK_SIZES = (500,)
# One full package consolidation run (both all-pairs passes) is measured on at most this many chunks (the first
# ones of the build): both passes are quadratic in pure Python (difflib on every ACTIVE pair), so a run on all
# 10,000 chunks is not affordable in `make bench`; 1,000 keeps it short.
CONSOLIDATION_MAX = 1_000
SV_MIN_REPS = 5  # our smartvector's batch is milliseconds: repeat it at least this often for a stable median


@contextlib.contextmanager
def linear_consolidation() -> Iterator[None]:
    """While the block runs, the package's two all-pairs passes (``ConflictDetector.detect_conflicts`` and
    ``RelationshipBuilder.build_relationships``) find nothing; every other consolidation step runs as shipped.
    Class attributes, restored afterwards whatever happens."""
    from smartvector.consolidation import ConflictDetector, RelationshipBuilder

    saved = ConflictDetector.detect_conflicts, RelationshipBuilder.build_relationships
    try:
        ConflictDetector.detect_conflicts = lambda self, *a, **kw: []
        RelationshipBuilder.build_relationships = lambda self, *a, **kw: []
        yield
    finally:
        ConflictDetector.detect_conflicts, RelationshipBuilder.build_relationships = saved


@contextlib.contextmanager
def timed_passes(totals: dict[str, float]) -> Iterator[None]:
    """Add the wall seconds of the package's two all-pairs passes to ``totals['conflicts_s' / 'relationships_s']``."""
    from smartvector.consolidation import ConflictDetector, RelationshipBuilder

    saved = ConflictDetector.detect_conflicts, RelationshipBuilder.build_relationships

    def wrap(fn, key):
        def timed(self, *a, **kw):
            t = time.perf_counter()
            try:
                return fn(self, *a, **kw)
            finally:
                totals[key] = totals.get(key, 0.0) + time.perf_counter() - t
        return timed

    try:
        ConflictDetector.detect_conflicts = wrap(saved[0], "conflicts_s")
        RelationshipBuilder.build_relationships = wrap(saved[1], "relationships_s")
        yield
    finally:
        ConflictDetector.detect_conflicts, RelationshipBuilder.build_relationships = saved


@contextlib.contextmanager
def no_fingerprint() -> Iterator[None]:
    """Switch off the retriever's store-unchanged audit (``_fingerprint``, built before and after every search)."""
    saved = ref_module._fingerprint
    try:
        ref_module._fingerprint = lambda db: ()
        yield
    finally:
        ref_module._fingerprint = saved


def _time_consolidations(r: SmartVectorRef, acc: dict) -> None:
    """Count the retriever's consolidation runs and the seconds spent in them (instance attribute)."""
    inner = r._consolidate

    def timed(at: float) -> dict:
        t = time.perf_counter()
        try:
            return inner(at)
        finally:
            acc["runs"] += 1
            acc["seconds"] += time.perf_counter() - t

    r._consolidate = timed


def serve_time_of(data: ScaleData) -> float:
    return float(np.max(data.queries.as_of))


def reference_index(data: ScaleData, **overrides) -> tuple[SmartVectorRef, float, dict]:
    """``smartvector_ref`` (benchmark config, ``overrides`` on top) indexed at :func:`serve_time_of` with the
    all-pairs passes bounded (:func:`linear_consolidation`); (retriever, seconds, {runs, seconds})."""
    r = SmartVectorRef(**retriever_config("smartvector_ref", **overrides))
    acc = {"runs": 0, "seconds": 0.0}
    _time_consolidations(r, acc)
    with linear_consolidation():
        t = time.perf_counter()
        r.index(data.corpus, data.corpus_vectors, serve_time_of(data))
        secs = time.perf_counter() - t
    return r, secs, acc


def corpus_prefix(corpus: Corpus, m: int) -> Corpus:
    """The first ``m`` chunks of ``corpus``: self-contained, since supersedes / depends_on only point backwards
    (asserted); for a scaled corpus it equals the corpus of a build of ``m`` rows with the same seed."""
    if m >= len(corpus):
        return corpus
    deps = Ragged(corpus.depends_on.indptr[: m + 1].copy(),
                  corpus.depends_on.indices[: corpus.depends_on.indptr[m]].copy())
    out = replace(corpus, ids=corpus.ids[:m], titles=corpus.titles[:m], texts=corpus.texts[:m],
                  doc_id=corpus.doc_id[:m], version=corpus.version[:m],
                  source=corpus.source[:m], authority=corpus.authority[:m], created_at=corpus.created_at[:m],
                  valid_from=corpus.valid_from[:m], valid_to=corpus.valid_to[:m], depends_on=deps,
                  supersedes=corpus.supersedes[:m], offset_start=corpus.offset_start[:m],
                  offset_end=corpus.offset_end[:m],
                  index_of={k: v for k, v in corpus.index_of.items() if v < m})
    assert (out.supersedes < m).all() and (deps.indices < m).all(), "corpus_prefix: a forward reference"
    return out


def full_consolidation(corpus: Corpus, serve_time: float, m: int) -> dict:
    """One full package consolidation run (as shipped) at ``serve_time`` on the first ``m`` chunks of ``corpus``,
    freshly ingested (``consolidation_schedule=serve_time_only``); {seconds, ingested, conflicts_s,
    relationships_s}."""
    part = corpus_prefix(corpus, m)
    r = SmartVectorRef(**retriever_config("smartvector_ref", consolidation_schedule="serve_time_only"))
    acc = {"runs": 0, "seconds": 0.0}
    _time_consolidations(r, acc)
    passes: dict[str, float] = {"conflicts_s": 0.0, "relationships_s": 0.0}
    with timed_passes(passes):
        r.index(part, np.zeros((len(part), 1), dtype=np.float32), serve_time)  # the package ignores vectors
    assert acc["runs"] == 1, acc
    return {"seconds": acc["seconds"], "ingested": r.n_ingested, **passes}


def bench_reference(data: ScaleData, n_queries: int, reps: int, *, candidates: int = 20,
                    consolidation_max: int = CONSOLIDATION_MAX) -> list[Row]:
    """smartvector_ref and our smartvector on the same first ``n_queries`` queries of ``data`` (see the module
    docstring for every row). ``consolidation_max`` <= 0 skips the full-consolidation measurement."""
    n, mode = len(data.corpus), data.vectors
    nq = min(int(n_queries), len(data.queries))
    if nq <= 0:
        raise ValueError(f"bench_reference: n_queries={n_queries} with {len(data.queries)} queries available")
    reps = max(1, int(reps))
    qv = data.query_vectors[:nq]
    as_of = np.asarray(data.queries.as_of, dtype=np.float64)[:nq]
    texts = [str(t) for t in data.queries.texts[:nq]]
    serve = serve_time_of(data)
    out: list[Row] = []

    # -- smartvector_ref: bounded ingest ------------------------------------------------------------------------
    r, secs, acc = reference_index(data)
    bound = "all-pairs conflict/relationship passes skipped during index()"
    out += rows("ingest", SYSTEM, n, mode, "seconds", [secs], "s",
                f"{r.n_ingested} ingest_document calls + {acc['runs']} consolidation runs; {bound}")
    out += rows("ingest", SYSTEM, n, mode, "consolidation_runs", [acc["runs"]], "count", bound)
    out += rows("ingest", SYSTEM, n, mode, "consolidation_linear_s", [acc["seconds"]], "s", bound)
    out += rows("ingest", SYSTEM, n, mode, "ingested", [r.n_ingested], "count", "chunks created by serve_time")
    for status in ("ACTIVE", "DORMANT", "DEPRECATED"):
        out += rows("ingest", SYSTEM, n, mode, f"status_{status.lower()}", [r.status_counts.get(status, 0)],
                    "count", "after the last consolidation run; a query scores only ACTIVE vectors")

    # -- smartvector_ref: queries -------------------------------------------------------------------------------
    r.search(qv, as_of, K, texts=texts)  # warm-up, with the retriever's check that the store is unchanged
    fp = repeat(lambda: ref_module._fingerprint(r.db), 3, warmup=0)
    out += rows("search_latency", SYSTEM, n, mode, "fingerprint_ms", [2e3 * np.median(fp)], "ms",
                "the retriever's store audit per search call (built twice), left out of query_ms and batch_s")
    note = "package db.query per query (keyword overlap on the text) + mapping to corpus rows; audit off"
    with no_fingerprint():
        lat = per_query_latency(lambda s: r.search(qv[s], as_of[s], K, texts=texts[s]), nq)
        batch = repeat(lambda: r.search(qv, as_of, K, texts=texts), reps, warmup=0)
    out += rows("search_latency", SYSTEM, n, mode, "query_ms", lat * 1e3, "ms", note)
    out += rows("search_batch", SYSTEM, n, mode, "batch_s", batch, "s", f"{nq} queries; {note}")
    out += rows("search_batch", SYSTEM, n, mode, "qps", [nq / s for s in batch], "1/s", f"{nq} queries; {note}")

    # -- our smartvector on the same queries --------------------------------------------------------------------
    sv = SmartVector(**retriever_config("smartvector"))
    t = time.perf_counter()
    sv.index(data.corpus, data.corpus_vectors, serve)
    out += rows("ingest", OURS, n, mode, "seconds", [time.perf_counter() - t], "s",
                "ingest + one consolidation run + FAISS flat")
    sv_note = f"default config ({'exhaustive' if sv.search_params.candidates is None else 're-rank'}); same queries"
    batch = repeat(lambda: sv.search(qv, as_of, K), max(reps, SV_MIN_REPS))
    out += rows("search_batch", OURS, n, mode, "batch_s", batch, "s", f"{nq} queries; {sv_note}")
    out += rows("search_batch", OURS, n, mode, "qps", [nq / s for s in batch], "1/s", f"{nq} queries; {sv_note}")
    lat = per_query_latency(lambda s: sv.search(qv[s], as_of[s], K), nq)
    out += rows("search_latency", OURS, n, mode, "query_ms", lat * 1e3, "ms", sv_note)
    # the certified re-ranking mode (exact up to float32 rounding) on the same queries, same index
    exact = sv.search(qv, as_of, K)
    base = sv.search_params
    sv.search_params = replace(base, candidates=int(candidates))
    rr_note = f"certified re-rank C={candidates} (default otherwise); same queries"
    batch = repeat(lambda: sv.search(qv, as_of, K), max(reps, SV_MIN_REPS))
    out += rows("search_batch", OURS_RERANK, n, mode, "batch_s", batch, "s", f"{nq} queries; {rr_note}")
    out += rows("search_batch", OURS_RERANK, n, mode, "qps", [nq / s for s in batch], "1/s",
                f"{nq} queries; {rr_note}")
    same = sv.search(qv, as_of, K).top1 == exact.top1
    out += rows("quality", OURS_RERANK, n, mode, "top1_agreement", float(same.mean()), "share",
                "with the exhaustive default on these queries")
    sv.search_params = base

    # -- one full package consolidation run (all pairs), on at most consolidation_max chunks --------------------
    m = min(n, int(consolidation_max))
    if m > 0:
        c = full_consolidation(data.corpus, serve, m)
        cnote = (f"one run as shipped at serve_time on the first {m:,} chunks ({c['ingested']} ingested), "
                 "schedule serve_time_only")
        out += rows("consolidation", SYSTEM, m, mode, "seconds", [c["seconds"]], "s", cnote)
        out += rows("consolidation", SYSTEM, m, mode, "conflicts_s", [c["conflicts_s"]], "s", cnote)
        out += rows("consolidation", SYSTEM, m, mode, "relationships_s", [c["relationships_s"]], "s", cnote)
        out += rows("consolidation", SYSTEM, m, mode, "ingested", [c["ingested"]], "count", cnote)
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the medians of :func:`bench_reference` at each size (the measurements in the module docstring)."""
    ap = argparse.ArgumentParser(prog="python -m smartvector_bench.tools.perf.reference")
    ap.add_argument("-n", type=int, nargs="+", default=list(FULL_SIZES))
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--consolidation-max", type=int, default=CONSOLIDATION_MAX)
    args = ap.parse_args(argv)
    for n in args.n:
        data = scale_dataset(n, seed=args.seed, n_queries=args.queries)
        t = time.perf_counter()
        out = bench_reference(data, args.queries, args.reps, consolidation_max=args.consolidation_max)
        print(f"== {n:,} chunks: {time.perf_counter() - t:.1f} s", flush=True)
        groups: dict[tuple, list[float]] = defaultdict(list)
        for r in out:
            groups[(r.case, r.system, r.metric, r.n_vectors)].append(r.value)
        for (case, system, metric, m), values in groups.items():
            s = timing_stats(values)
            print(f"  {case:<15} {system:<16} {metric:<23} n_vectors={m:<6} median {s['median']:<10.4g} "
                  f"p95 {s['p95']:<10.4g} n={s['n']}", flush=True)
        del data
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
