"""``lancedb_valid``: the chunks in an embedded LanceDB table, each query one prefiltered vector search on the
validity window (``.where(..., prefilter=True)``), the store-native version of valid_cosine.

**Store.** ``lancedb.connect`` on a temporary folder (:mod:`smartvector_bench.systems.stores`: removed on close,
garbage collection or exit), one table: ``row`` (int64, the corpus row: the id a hit maps back through),
``vector`` (fixed-size list of float32), ``created_at``, ``valid_from``, ``valid_to``.

**Columns.** The window fields are float64 columns holding the corpus's own values, days since the epoch: the
filter compares the very numbers valid_cosine compares (a timestamp column would round them to microseconds,
and could not hold an open window). An open window is ``valid_to`` = +inf, as in the corpus: Arrow's float64
holds it and ``valid_to > as_of`` is true for every finite ``as_of``, so no sentinel is needed. The filter is
``created_at <= T AND valid_from <= T AND valid_to > T`` with ``T`` written as Python's shortest round-trip
repr of the float64 ``as_of`` (DataFusion parses it back to the same double; the tests probe boundaries).

**Search.** ``distance_type("dot")`` on the given (L2-normalised) vectors: LanceDB returns ``_distance`` =
1 - dot, in float32, and the score is ``1 - _distance`` (equal to FAISS's inner product to ~1e-7).

* ``mode: exact`` (default): no vector index; LanceDB scans every row the prefilter keeps (brute force), so the
  top-k is exact.
* ``mode: ann``: an ``index_type`` index built after the rows are added (``ivf_hnsw_sq``: IVF partitions each
  holding an HNSW graph over 8-bit scalar-quantised vectors; ``ivf_pq``: IVF with product quantisation),
  searched with ``nprobes`` partitions, HNSW ``ef`` (raised to k + tie margin: LanceDB refuses less) and
  ``refine_factor`` (re-score ``refine_factor * k`` candidates on the full vectors). A setting at 0 leaves
  LanceDB's default. The prefilter is applied inside the index search; the IVF training is not seeded by
  LanceDB, so ANN rankings can differ between runs.

``describe()``: mode and parameters, the column encoding, ``import_s`` (lancedb's first import), ``index_s``
(connect, add, index), ``ann_index_s`` (the index alone), query latency median / p95 (one search per query),
and the checks of :class:`~smartvector_bench.systems.stores.StoreRetriever`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from smartvector_bench.core.settings import choice
from smartvector_bench.systems.stores import StoreRetriever

TABLE = "corpus"
INDEX_TYPES = {"ivf_hnsw_sq": "HnswSq", "ivf_pq": "IvfPq"}  # setting -> lancedb.index class


@dataclass(frozen=True)
class LanceDBValidParams:
    POSITIVE: ClassVar[tuple[str, ...]] = ("m", "ef_construction")

    mode: str = choice("exact", "ann")
    index_type: str = choice("ivf_hnsw_sq", "ivf_pq")
    num_partitions: int = 0
    num_sub_vectors: int = 0
    nprobes: int = 0
    ef: int = 0
    refine_factor: int = 0
    m: int = 20
    ef_construction: int = 300


def where_in_force(as_of: float) -> str:
    """The prefilter at a finite ``as_of``: the float64 as its shortest round-trip repr, a SQL literal that
    DataFusion parses back to the same double."""
    t = repr(float(as_of))
    return f"created_at <= {t} AND valid_from <= {t} AND valid_to > {t}"


class LanceDBValid(StoreRetriever):
    name = "lancedb_valid"
    PARAMS = LanceDBValidParams

    def _import(self) -> None:
        import lancedb  # noqa: F401
        import pyarrow  # noqa: F401

    def _open(self, vectors: np.ndarray, window: dict[str, np.ndarray]) -> None:
        import lancedb
        import pyarrow as pa

        folder, closers = self.temp_folder()
        db = lancedb.connect(str(folder))
        closers.append(getattr(db, "close", lambda: None))
        dim = int(vectors.shape[1])
        table = pa.table({
            "row": pa.array(np.arange(len(vectors), dtype=np.int64)),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), type=pa.float32()), dim),
            **{f: pa.array(v, type=pa.float64()) for f, v in window.items()},
        })
        self._table = db.create_table(TABLE, data=table)
        self._version = lancedb.__version__
        if self.p.mode == "ann":
            start = time.perf_counter()
            self._table.create_index("vector", config=self._index_config(), replace=True)
            self._timing["ann_index_s"] = round(time.perf_counter() - start, 4)

    def _index_config(self):
        from lancedb import index

        p = self.p
        common = {"distance_type": "dot", "num_partitions": p.num_partitions or None}
        if p.index_type == "ivf_pq":
            return index.IvfPq(**common, num_sub_vectors=p.num_sub_vectors or None)
        return index.HnswSq(**common, m=p.m, ef_construction=p.ef_construction)

    def _query(self, vector: np.ndarray, as_of: float, n: int) -> tuple[np.ndarray, np.ndarray]:
        query = (self._table.search(vector, vector_column_name="vector").distance_type("dot")
                 .where(where_in_force(as_of), prefilter=True)
                 .limit(n).select(["row", "_distance"]))
        if self.p.mode == "ann":
            if self.p.nprobes:
                query = query.nprobes(self.p.nprobes)
            if self.p.ef:
                query = query.ef(max(self.p.ef, n))  # LanceDB refuses ef below the limit
            if self.p.refine_factor:
                query = query.refine_factor(self.p.refine_factor)
        hits = query.to_arrow()
        rows = hits["row"].to_numpy()
        return rows, 1.0 - hits["_distance"].to_numpy().astype(np.float64)

    def _store_info(self) -> dict:
        p = self.p
        if p.mode == "exact":
            search = {"index": None, "how": "no vector index: a flat scan of every row the prefilter keeps (exact)"}
        else:
            search = {"index": p.index_type, "num_partitions": p.num_partitions or "lancedb default",
                      "nprobes": p.nprobes or "lancedb default", "refine_factor": p.refine_factor or None}
            if p.index_type == "ivf_pq":
                search["num_sub_vectors"] = p.num_sub_vectors or "lancedb default"
            else:
                search.update({"m": p.m, "ef_construction": p.ef_construction, "ef": f"max({p.ef}, k + tie margin)" if p.ef else "lancedb default"})
        return {"store": f"lancedb {getattr(self, '_version', '(not indexed)')}", "mode": p.mode, "search": search,
                "filter": "created_at <= T AND valid_from <= T AND valid_to > T, .where(..., prefilter=True)",
                "metric": "dot (_distance = 1 - dot; score = 1 - _distance)",
                "columns": {"created_at": "float64 days since epoch", "valid_from": "float64 days since epoch",
                            "valid_to": "float64 days since epoch"},
                "open_window": "valid_to = +inf (float64 holds it; no sentinel)"}
