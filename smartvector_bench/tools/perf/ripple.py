"""Ripple cost per update at scale: SmartVector's ``ripple()`` over a prebuilt ``depended_by`` CSR plus the
penalties applied to the store's columns, and the SQLite spec store's ripple (kg_smartvector), on the same
origins.

The dependency graph is the corpus's given ``depends_on`` edges (``corpus.depends_on``), reversed into
``depended_by`` with :func:`smartvector_bench.systems.smartvector.consolidation.reverse` (the same CSR builder the consolidation
agent uses). The edges the agent detects itself (word-overlap dependencies between documents, and edges moved
to a superseded chunk's successor) are NOT added: consolidation at 100K is a separate case; the given edges
are the graph every ripple walks in the default configuration's first run.

Origins: ``n_origins`` vectors drawn with ``seed`` (without replacement) among the vectors that have at least one
dependant. Every vector is in force (ACTIVE), so nothing is skipped.

Rows (case ``ripple``; nothing asserted):

- ``ripple_smartvector``: ``update_ms`` one row per origin: ``ripple(depended_by, origin, RippleParams())``
  (depth 2, 0.15 / 0.075) plus the penalties applied to ``VectorStore.penalty`` (the column base confidence
  reads, floor 0.05, as ``VectorStore.penalize`` applies it, without its event log); ``logged_update_ms``: the
  same through ``VectorStore.penalize`` (live confidence before and after, the event and the ledger entry);
  ``hits`` (mean dependants penalised per update), ``build_ms`` (the ``depended_by`` CSR, once);
- ``ripple_kg_sqlite``: ``update_ms`` one row per origin: ``KnowledgeGraph.ripple`` (depth 2, halving per hop;
  a ``kg_feedback`` and a ``kg_confidence_log`` row per hit, in one transaction) on a SQLite file holding one
  entity per chunk and one ``depends_on`` row per given edge; ``hits``; ``ingest_s`` (building that file).
  ``kg_max_entities`` caps the SQLite store's size (default: no cap); the row's ``n_vectors`` is the size used.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from smartvector_bench.systems.smartvector.consolidation import edges_to_ragged, reverse
from smartvector_bench.core.csr import Ragged
from smartvector_bench.systems.kg_smartvector.store import KnowledgeGraph
from smartvector_bench.systems.smartvector.lifecycle import Status
from smartvector_bench.systems.smartvector.ripple import RippleParams, ripple
from smartvector_bench.tools.scale import ScaleData
from smartvector_bench.systems.smartvector.store import VectorStore
from smartvector_bench.tools.perf.timing import Row, rows


def depended_by_graph(data: ScaleData, n: int | None = None) -> Ragged:
    """``depended_by`` of the first ``n`` rows (all by default) from the corpus's given ``depends_on``."""
    dep = data.corpus.depends_on
    n = len(data.corpus) if n is None else int(n)
    src, dst = dep.row_ids(), dep.indices
    keep = (src < n) & (dst < n)
    return reverse(edges_to_ragged(src[keep], dst[keep], n))


def sample_origins(depended_by: Ragged, n_origins: int, seed: int) -> np.ndarray:
    have = np.nonzero(depended_by.counts() > 0)[0]
    rng = np.random.default_rng([int(seed), 6])
    return np.sort(rng.choice(have, size=min(int(n_origins), len(have)), replace=False)) if len(have) else have


def apply_to_columns(store: VectorStore, hits: list[tuple[int, int, float]], floor: float) -> None:
    """Each hit's penalty on ``store.penalty``, as :meth:`VectorStore.penalize` applies it (never below
    ``floor``, never raising base confidence), without the event log. A vector is hit once per origin."""
    if not hits:
        return
    v = np.fromiter((h[0] for h in hits), dtype=np.int64, count=len(hits))
    amount = np.fromiter((h[2] for h in hits), dtype=np.float64, count=len(hits))
    base = store.corpus.authority[v] - store.penalty[v]
    store.penalty[v] += np.where(base > floor, base - np.maximum(floor, base - amount), 0.0)


def active_store(data: ScaleData) -> VectorStore:
    store = VectorStore(data.corpus)
    store.status[:] = Status.ACTIVE
    store.ingested_at[:] = data.corpus.created_at
    return store


def bench_smartvector_ripple(data: ScaleData, origins: np.ndarray, depended_by: Ragged) -> tuple[list[Row], dict]:
    n, mode = len(data.corpus), data.vectors
    p = RippleParams()
    t_at = float(np.max(data.corpus.created_at))
    out: list[Row] = []
    store = active_store(data)
    skip = ~store.in_force()
    times, hits_n = np.empty(len(origins)), np.empty(len(origins))
    for j, o in enumerate(origins.tolist()):
        t = time.perf_counter()
        hits = ripple(depended_by, o, p, skip=skip)
        apply_to_columns(store, hits, p.floor)
        times[j] = time.perf_counter() - t
        hits_n[j] = len(hits)
    note = "ripple() over the prebuilt depended_by CSR + penalties on the store's penalty column"
    out += rows("ripple", "ripple_smartvector", n, mode, "update_ms", times * 1000, "ms", note)
    out += rows("ripple", "ripple_smartvector", n, mode, "hits", [hits_n.mean()], "vectors",
                f"mean dependants penalised per update, {len(origins)} origins")
    logged = active_store(data)
    times2 = np.empty(len(origins))
    for j, o in enumerate(origins.tolist()):
        t = time.perf_counter()
        for v, depth, pen in ripple(depended_by, o, p, skip=skip):
            logged.penalize(v, pen, o, depth, t_at, p.floor)
        times2[j] = time.perf_counter() - t
    out += rows("ripple", "ripple_smartvector", n, mode, "logged_update_ms", times2 * 1000, "ms",
                "ripple() + VectorStore.penalize (live confidence before/after, event log, ledger)")
    return out, {"store": store, "logged": logged}


def build_kg(data: ScaleData, path: Path, n: int) -> tuple[KnowledgeGraph, np.ndarray, float]:
    """A SQLite spec store with one entity per chunk of the first ``n`` rows (no vectors: the ripple does not
    read them) and a ``depends_on`` row per given edge, as kg_smartvector writes them; (store, entity ids,
    seconds)."""
    c = data.corpus
    t0 = time.perf_counter()
    kg = KnowledgeGraph(path)
    ent = np.full(n, -1, dtype=np.int64)
    with kg.transaction():
        for i in range(n):
            ent[i] = kg.insert_entity("chunk", c.ids[i], {"chunk_id": c.ids[i]}, at=float(c.created_at[i]),
                                      base_confidence=float(c.authority[i]), valid_from=float(c.valid_from[i]),
                                      valid_until=float(c.valid_to[i]))
        dep = c.depends_on
        for i, j in zip(dep.row_ids().tolist(), dep.indices.tolist()):
            if i < n and j < n and i != j:
                kg.add_dependency(int(ent[i]), int(ent[j]), "depends_on",
                                  at=float(max(c.created_at[i], c.created_at[j])))
    return kg, ent, time.perf_counter() - t0


def bench_kg_ripple(data: ScaleData, origins: np.ndarray, n: int, tmp: Path) -> list[Row]:
    mode = data.vectors
    kg, ent, secs = build_kg(data, tmp / "ripple.sqlite", n)
    try:
        at = float(np.max(data.corpus.created_at[:n]))
        origins = origins[origins < n]
        times, hits_n = np.empty(len(origins)), np.empty(len(origins))
        for j, o in enumerate(origins.tolist()):
            t = time.perf_counter()
            hits = kg.ripple(int(ent[o]), at)
            times[j] = time.perf_counter() - t
            hits_n[j] = len(hits)
    finally:
        kg.close()
    out = rows("ripple", "ripple_kg_sqlite", n, mode, "ingest_s", [secs], "s",
               "entities + depends_on rows into SQLite (WAL), one transaction")
    out += rows("ripple", "ripple_kg_sqlite", n, mode, "update_ms", times * 1000, "ms",
                "KnowledgeGraph.ripple: depth 2, halving per hop, feedback + log rows per hit")
    out += rows("ripple", "ripple_kg_sqlite", n, mode, "hits", [hits_n.mean() if len(hits_n) else 0.0], "entities",
                f"mean entities penalised per update, {len(origins)} origins")
    return out


def bench_ripple(data: ScaleData, n_origins: int = 1000, seed: int = 0, kg: bool = True,
                 kg_max_entities: int | None = None) -> list[Row]:
    n, mode = len(data.corpus), data.vectors
    t = time.perf_counter()
    depended_by = depended_by_graph(data)
    build = time.perf_counter() - t
    out = rows("ripple", "ripple_smartvector", n, mode, "build_ms", [build * 1000], "ms",
               f"depended_by CSR from the given depends_on ({len(depended_by.indices)} edges)")
    origins = sample_origins(depended_by, n_origins, seed)
    sv_rows, _ = bench_smartvector_ripple(data, origins, depended_by)
    out += sv_rows
    if kg:
        n_kg = n if kg_max_entities is None else min(n, int(kg_max_entities))
        if n_kg < n:  # origins drawn again among the vectors with dependants inside the smaller store
            origins = sample_origins(depended_by_graph(data, n_kg), n_origins, seed)
        with tempfile.TemporaryDirectory(prefix="ripple-kg-") as tmp:
            out += bench_kg_ripple(data, origins, n_kg, Path(tmp))
    return out
