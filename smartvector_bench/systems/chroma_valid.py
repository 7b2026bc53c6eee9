"""``chroma_valid``: the chunks in an embedded Chroma collection, each query one vector search with a ``where``
filter on the validity window, the store-native version of valid_cosine.

**Store.** ``chromadb.PersistentClient`` on a temporary folder (:mod:`smartvector_bench.systems.stores`: the
client is closed and the folder removed on close, garbage collection or exit), ``anonymized_telemetry=False``.
The collection is created with ``embedding_function=None`` and every vector is passed in (``embeddings=`` /
``query_embeddings=``): Chroma's default ONNX embedding function, which would download a model, is never built.
Ids are the corpus rows as strings.

**Columns.** The window fields are float metadata (Chroma keeps a float as a float64: the values round-trip
exactly), days since the epoch, the very numbers valid_cosine compares. Chroma silently drops a non-finite
metadata value (the key vanishes from the record, so ``valid_to > T`` never matches an open window), so +inf and
-inf are stored as +/- the largest float64 (:func:`~smartvector_bench.systems.stores.finite_times`): every
comparison with a finite ``as_of`` keeps its truth value. The filter is ``{"$and": [{"created_at": {"$lte": T}},
{"valid_from": {"$lte": T}}, {"valid_to": {"$gt": T}}]}``.

**Search.** Chroma has one vector index, HNSW (hnswlib), and no brute-force mode. ``space: ip`` gives distance =
1 - inner product (float32); the score is 1 - distance. The graph is built with ``num_threads: 1`` (a
multi-threaded build is not deterministic).

* ``mode: exact`` (default) sets ``ef_search`` to the collection size. A filtered hnswlib search keeps
  expanding while it holds fewer than ``ef`` allowed results, so with ``ef`` >= N it visits every node reachable
  from the entry point: the top-k is exact unless the graph leaves a node unreachable (hnswlib does not
  guarantee connectivity). That is what "exact" means here; ``checks.short_queries`` in ``describe()`` counts
  the queries that got fewer hits than are in force, and the tests compare the rankings with valid_cosine's.
* ``mode: ann``: ``ef_search`` as set (Chroma's default 100).

``ef_construction`` and ``max_neighbors`` (HNSW's M) apply to both modes (Chroma's defaults 100 and 16), all set
through the collection's ``configuration={"hnsw": {...}}`` (chromadb 1.x; the 0.x ``hnsw:*`` metadata keys are
its legacy form).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from smartvector_bench.core.settings import choice
from smartvector_bench.systems.stores import StoreRetriever, finite_times

COLLECTION = "corpus"


@dataclass(frozen=True)
class ChromaValidParams:
    POSITIVE: ClassVar[tuple[str, ...]] = ("ef_search", "ef_construction", "max_neighbors")

    mode: str = choice("exact", "ann")
    ef_search: int = 100
    ef_construction: int = 100
    max_neighbors: int = 16


def where_in_force(as_of: float) -> dict:
    t = float(as_of)
    return {"$and": [{"created_at": {"$lte": t}}, {"valid_from": {"$lte": t}}, {"valid_to": {"$gt": t}}]}


class ChromaValid(StoreRetriever):
    name = "chroma_valid"
    PARAMS = ChromaValidParams

    def _import(self) -> None:
        import chromadb  # noqa: F401

    def _open(self, vectors: np.ndarray, window: dict[str, np.ndarray]) -> None:
        import chromadb
        from chromadb.config import Settings

        folder, closers = self.temp_folder()
        client = chromadb.PersistentClient(path=str(folder), settings=Settings(anonymized_telemetry=False))
        closers.append(client.close)
        n = len(vectors)
        self._ef_search = max(n, 1) if self.p.mode == "exact" else self.p.ef_search
        hnsw = {"space": "ip", "ef_search": self._ef_search, "ef_construction": self.p.ef_construction,
                "max_neighbors": self.p.max_neighbors, "num_threads": 1}
        self._collection = client.create_collection(COLLECTION, embedding_function=None,
                                                    configuration={"hnsw": hnsw})
        stored = {f: finite_times(v) for f, v in window.items()}
        batch = max(1, int(client.get_max_batch_size()))
        for lo in range(0, n, batch):
            hi = min(n, lo + batch)
            self._collection.add(ids=[str(i) for i in range(lo, hi)], embeddings=vectors[lo:hi],
                                 metadatas=[{f: float(v[i]) for f, v in stored.items()} for i in range(lo, hi)])
        self._version = chromadb.__version__
        with warnings.catch_warnings():  # reading back a collection made without an embedding function warns
            warnings.simplefilter("ignore", DeprecationWarning)  # "legacy embedding function config"
            self._hnsw = dict(self._collection.configuration.get("hnsw") or hnsw)

    def _query(self, vector: np.ndarray, as_of: float, n: int) -> tuple[np.ndarray, np.ndarray]:
        res = self._collection.query(query_embeddings=vector[None, :], n_results=n, where=where_in_force(as_of),
                                     include=["distances"])
        rows = np.array([int(i) for i in res["ids"][0]], dtype=np.int64)
        return rows, 1.0 - np.asarray(res["distances"][0], dtype=np.float64)

    def _store_info(self) -> dict:
        p = self.p
        exact = ("ef_search = collection size: the filtered HNSW search visits every node reachable from the "
                 "entry point, exact unless the graph leaves a node unreachable (Chroma has no brute-force search)")
        return {"store": f"chromadb {getattr(self, '_version', '(not indexed)')}", "mode": p.mode,
                "search": {"index": "hnsw", "ef_search": getattr(self, "_ef_search", None) if p.mode == "exact"
                           else p.ef_search, "ef_construction": p.ef_construction, "max_neighbors": p.max_neighbors,
                           "num_threads": 1, **({"exact_means": exact} if p.mode == "exact" else {}),
                           **({"collection_hnsw": getattr(self, "_hnsw")} if hasattr(self, "_hnsw") else {})},
                "filter": 'where {"$and": [created_at $lte T, valid_from $lte T, valid_to $gt T]}',
                "metric": "ip (distance = 1 - inner product; score = 1 - distance)",
                "columns": {"created_at": "float metadata (float64) days since epoch",
                            "valid_from": "float metadata (float64) days since epoch",
                            "valid_to": "float metadata (float64) days since epoch"},
                "open_window": "valid_to = +inf stored as 1.7976931348623157e308 (the largest float64), -inf as its "
                               "negative: Chroma drops a non-finite metadata value"}
