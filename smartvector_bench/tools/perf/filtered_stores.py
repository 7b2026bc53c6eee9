"""The vector stores of the filtered-ANN case (:mod:`.filtered_ann`), each behind one small adapter: build it
from a :class:`~.filtered_data.Versioned` data set in a scratch folder, then answer one query at a time with
the as-of filter ``valid_from <= t AND valid_to > t`` in the store's own filter language.

- ``LanceStore``: LanceDB with an IVF_PQ index (``distance_type="dot"``), searched with ``.where(filter,
  prefilter=True)`` (the filter restricts the ANN search) or ``prefilter=False`` (ANN top-``limit`` first, then
  the filter: at most ``limit`` rows come back). Partitions and sub-vectors are the case's config; probes are
  LanceDB's defaults (at least 20, more while a prefiltered query has too few results); ``refine_factor``
  re-ranks that many times the limit with the full vectors (PQ distances alone lose most of the top 10 here).
- ``MilvusStore``: Milvus Lite (``pymilvus`` ``MilvusClient`` on a local ``.db`` folder, served in-process):
  an HNSW index (inner product) per segment, a ``filter`` expression on two DOUBLE fields. Milvus Lite builds
  each flushed segment's index on a background thread: until it is done a segment is searched by brute force
  (exact, slow) while the build takes the CPU, so the build is timed until that thread has drained and every
  segment has its index (read through Milvus Lite's in-process server: it has no public call for it).
- ``ChromaStore``: Chroma's persistent client (HNSW, inner product), a ``where`` filter on two metadata fields.

Every adapter returns corpus row numbers (the stores' primary keys are the rows), -1 padded to ``k``. Builds
are timed from the first write to an index that answers queries (Milvus Lite: flushed, loaded; Chroma builds
its graph while rows are added). The stores are imported inside the adapters, so the case runs (and says why
a store was left out) where a store is not installed.
"""

from __future__ import annotations

import os
import shutil
import time
import warnings
from pathlib import Path

import numpy as np

from smartvector_bench.tools.perf.filtered_data import Versioned

NAME = "filtered_ann"  # the collection / table name


def predicate(t: float) -> tuple[str, dict]:
    """The as-of filter at ``t`` as a SQL / Milvus expression and as a Chroma ``where`` document."""
    sql = f"valid_from <= {float(t)!r} AND valid_to > {float(t)!r}"
    where = {"$and": [{"valid_from": {"$lte": float(t)}}, {"valid_to": {"$gt": float(t)}}]}
    return sql, where


def version(*dists: str) -> str:
    """``name version`` of each installed distribution (the notes carry them: PROVENANCE lists the core ones)."""
    from importlib import metadata

    out = []
    for d in dists:
        try:
            out.append(f"{d} {metadata.version(d)}")
        except metadata.PackageNotFoundError:
            out.append(f"{d} ?")
    return ", ".join(out)


def _padded(ids, k: int) -> np.ndarray:
    out = np.full(k, -1, dtype=np.int64)
    ids = np.asarray(ids, dtype=np.int64)[:k]
    out[:len(ids)] = ids
    return out


class Store:
    """Build once (:meth:`build`, seconds), then :meth:`search` one query vector at time ``t``."""

    name = "store"

    def __init__(self, folder: Path, **params):
        self.folder = Path(folder)
        self.params = params

    def build(self, data: Versioned) -> float:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)
        t = time.perf_counter()
        self._build(data)
        return time.perf_counter() - t

    def _build(self, data: Versioned) -> None:
        raise NotImplementedError

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class LanceStore(Store):
    name = "lancedb"

    def _build(self, data: Versioned) -> None:
        import lancedb
        import pyarrow as pa
        from lancedb.index import IvfPq

        p, n = self.params, len(data)
        db = lancedb.connect(str(self.folder))
        vec = pa.FixedSizeListArray.from_arrays(pa.array(data.vectors.ravel()), data.vectors.shape[1])
        self.table = db.create_table(NAME, data=pa.table({
            "id": np.arange(n, dtype=np.int64), "vector": vec, "valid_from": data.valid_from,
            "valid_to": data.valid_to}))
        self.partitions = max(1, n // int(p["rows_per_partition"]))
        self.table.create_index("vector", config=IvfPq(
            distance_type="dot", num_partitions=self.partitions, num_sub_vectors=int(p["num_sub_vectors"]),
            max_iterations=int(p["max_iterations"])))

    def describe(self) -> str:
        p = self.params
        return (f"{version('lancedb')}: IVF_PQ dot, {self.partitions} partitions, {p['num_sub_vectors']} "
                f"sub-vectors x 8 bits, {p['max_iterations']} k-means iterations; default probes; refine_factor "
                f"{p['refine_factor']}")

    def search(self, q: np.ndarray, t: float, k: int, prefilter: bool) -> np.ndarray:
        sql, _ = predicate(t)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = (self.table.search(q).distance_type("dot").where(sql, prefilter=prefilter).limit(k)
                   .refine_factor(int(self.params["refine_factor"])).select(["id"]).to_arrow())
        return _padded(res["id"].to_numpy(), k)


class MilvusStore(Store):
    name = "milvus_lite"

    def _build(self, data: Versioned) -> None:
        from pymilvus import DataType, MilvusClient

        p = self.params
        self.client = MilvusClient(str(self.folder / "filtered.db"))
        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=int(data.vectors.shape[1]))
        schema.add_field("valid_from", DataType.DOUBLE)
        schema.add_field("valid_to", DataType.DOUBLE)
        index = self.client.prepare_index_params()
        index.add_index(field_name="vector", index_type="HNSW", metric_type="IP",
                        params={"M": int(p["m"]), "efConstruction": int(p["ef_construction"])})
        self.client.create_collection(NAME, schema=schema, index_params=index)
        vf, vt = data.valid_from.tolist(), data.valid_to.tolist()
        for lo in range(0, len(data), 5000):  # the client takes rows as dicts
            hi = min(len(data), lo + 5000)
            self.client.insert(NAME, [{"id": i, "vector": data.vectors[i], "valid_from": vf[i], "valid_to": vt[i]}
                                      for i in range(lo, hi)])
        self.client.flush(NAME)
        self.client.load_collection(NAME)
        self.segments = self._wait_for_indexes()

    def _wait_for_indexes(self) -> int:
        """Drain Milvus Lite's background compaction and index builds; the number of segments, each indexed."""
        from milvus_lite.server_manager import server_manager_instance

        _, db, _ = server_manager_instance._servers[os.path.abspath(self.folder / "filtered.db")]
        col = db.get_collection(NAME)
        for _ in range(10):  # a compaction can schedule another pass
            col._wait_for_bg()
            segments = [s for s in col._segment_cache.values() if s.num_rows]
            if all("vector" in s.indexes for s in segments):
                return len(segments)
        raise RuntimeError("milvus_lite: segments left without an index after its background builds drained")

    def describe(self) -> str:
        p = self.params
        return (f"{version('pymilvus', 'milvus-lite')}: HNSW IP M={p['m']} efConstruction={p['ef_construction']} "
                f"ef={p['ef_search']}, one per segment ({self.segments} segments; build timed until the background "
                "index builds are done)")

    def search(self, q: np.ndarray, t: float, k: int) -> np.ndarray:
        sql, _ = predicate(t)
        res = self.client.search(NAME, data=[q], anns_field="vector", limit=k, filter=sql.replace("AND", "and"),
                                 search_params={"metric_type": "IP", "params": {"ef": int(self.params["ef_search"])}})
        return _padded([h["id"] for h in res[0]], k)

    def close(self) -> None:
        from milvus_lite.server_manager import server_manager_instance

        if getattr(self, "client", None) is not None:
            self.client.close()
        server_manager_instance.release_server(str(self.folder / "filtered.db"))  # its thread, memory, files
        super().close()


class ChromaStore(Store):
    name = "chroma"

    def _build(self, data: Versioned) -> None:
        import chromadb
        from chromadb.config import Settings

        p = self.params
        self.client = chromadb.PersistentClient(path=str(self.folder), settings=Settings(anonymized_telemetry=False))
        self.col = self.client.create_collection(NAME, configuration={"hnsw": {
            "space": "ip", "max_neighbors": int(p["m"]), "ef_construction": int(p["ef_construction"]),
            "ef_search": int(p["ef_search"])}})
        batch = self.client.get_max_batch_size()
        vf, vt = data.valid_from.tolist(), data.valid_to.tolist()
        for lo in range(0, len(data), batch):
            hi = min(len(data), lo + batch)
            self.col.add(ids=[str(i) for i in range(lo, hi)], embeddings=data.vectors[lo:hi],
                         metadatas=[{"valid_from": vf[i], "valid_to": vt[i]} for i in range(lo, hi)])

    def describe(self) -> str:
        p = self.params
        return (f"{version('chromadb')}: HNSW ip max_neighbors={p['m']} ef_construction={p['ef_construction']} "
                f"ef_search={p['ef_search']}")

    def search(self, q: np.ndarray, t: float, k: int) -> np.ndarray:
        _, where = predicate(t)
        res = self.col.query(query_embeddings=q[None, :], n_results=k, where=where, include=[])
        return _padded([int(i) for i in res["ids"][0]], k)

    def close(self) -> None:
        self.col = None
        self.client = None
        super().close()


STORES = {"lancedb": LanceStore, "milvus_lite": MilvusStore, "chroma": ChromaStore}


def available(name: str) -> str | None:
    """None if the store's client imports, else why not (one line)."""
    module = {"lancedb": "lancedb", "milvus_lite": "pymilvus", "chroma": "chromadb"}[name]
    try:
        __import__(module)
    except ImportError as e:
        return f"{module} not installed ({e})"
    return None
