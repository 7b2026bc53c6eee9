"""``milvus_valid``: the chunks in a Milvus collection, each query one filtered vector search on the validity
window, the store-native version of valid_cosine.

**Store.** ``uri: null`` (default): Milvus Lite (``pymilvus.MilvusClient("<tmp>/store.db")``; milvus-lite 3.x
serves the ``.db`` folder from a gRPC server thread in this process) in a temporary folder
(:mod:`smartvector_bench.systems.stores`: the client is closed, the Lite server released and the folder removed
on close, garbage collection or exit). ``uri``: any Milvus (``http://host:19530``, or another ``.db`` path for
Lite); the collection ``svb_<name>_<random>`` is created there, with ``consistency_level="Strong"``, and dropped
on close; nothing else there is touched. The primary key ``row`` (INT64) is the corpus row.

**Columns.** The window fields are DOUBLE (float64) fields, days since the epoch, the very numbers valid_cosine
compares (Milvus has no timestamp scalar type to filter on). An open window (``valid_to`` = +inf) and a
``created_at`` "for all time" (-inf) are stored as +/- the largest float64
(:func:`~smartvector_bench.systems.stores.finite_times`): Milvus Lite takes an infinity, but a Milvus server
refuses NaN / Inf in vectors and does not document what it does with them in scalar fields (not tried here: no
server on this machine), so the sentinel keeps one encoding that holds on both; every comparison with a finite
``as_of`` keeps its truth value. The filter is ``created_at <= T and valid_from <= T and valid_to > T``, ``T``
the shortest round-trip repr of the float64 ``as_of``.

**Search.** ``metric_type: IP`` on the given (L2-normalised) vectors: Milvus returns the inner product as the
hit's ``distance`` (larger is closer), the score as it is.

* ``mode: exact`` (default): a ``FLAT`` index: brute force over the rows the filter keeps, exact. Milvus Lite's
  is NumPy's product, whose float32 sums can differ from FAISS's in the last bit: two chunks that tie exactly in
  valid_cosine can then come out in the other order (seen with the hashing embedder's sparse vectors).
* ``mode: ann``: ``HNSW`` (``M`` = ``hnsw_m``, ``efConstruction`` = ``hnsw_ef_construction``; Milvus Lite builds
  it with FAISS), searched with ``ef`` = max(``hnsw_ef``, k + tie margin) (a Milvus server refuses ``ef`` below
  the limit).

The rows are inserted and flushed first (every row in a sealed segment; Milvus Lite searches rows still in its
memtable by brute force), then the index is created and the collection loaded, which builds it on every segment.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.settings import choice, section
from smartvector_bench.systems.stores import StoreRetriever, finite_times

INSERT_BATCH = 1000  # rows per insert call (a gRPC message stays far below its size limit)


@dataclass(frozen=True)
class MilvusValidParams:
    POSITIVE: ClassVar[tuple[str, ...]] = ("hnsw_m", "hnsw_ef_construction", "hnsw_ef")

    mode: str = choice("exact", "ann")
    hnsw_m: int = 16
    hnsw_ef_construction: int = 200
    hnsw_ef: int = 64
    uri: str | None = None


def expr_in_force(as_of: float) -> str:
    """The filter at a finite ``as_of``: the float64 as its shortest round-trip repr, a literal that parses back
    to the same double."""
    t = repr(float(as_of))
    return f"created_at <= {t} and valid_from <= {t} and valid_to > {t}"


class MilvusValid(StoreRetriever):
    name = "milvus_valid"
    PARAMS = MilvusValidParams

    def settings(self, params: dict, where: str) -> MilvusValidParams:
        p = section(MilvusValidParams, params, where)
        if p.uri is not None and (not isinstance(p.uri, str) or not p.uri.strip()):
            raise BenchError(f"{where}.uri={p.uri!r}: must be null (Milvus Lite in a temporary folder) or a Milvus "
                             "URI (http://host:port, or a path ending in .db)")
        return p

    def _import(self) -> None:
        import pymilvus  # noqa: F401

    def _open(self, vectors: np.ndarray, window: dict[str, np.ndarray]) -> None:
        import pymilvus
        from pymilvus import DataType, MilvusClient

        if self.p.uri is None:
            folder, closers = self.temp_folder()
            uri, self._collection = str(folder / "store.db"), "corpus"
        else:
            closers = self.closers()
            uri, self._collection = self.p.uri, f"svb_{self.name}_{uuid.uuid4().hex[:12]}"
        client = MilvusClient(uri)
        if uri.endswith(".db"):  # Milvus Lite: stop its server thread once the client is closed
            closers.append(lambda path=uri: _release_lite(path))
        closers.append(client.close)
        self._client = client
        dim = int(vectors.shape[1])
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("row", DataType.INT64, is_primary=True)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
        for f in window:
            schema.add_field(f, DataType.DOUBLE)
        client.create_collection(self._collection, schema=schema, consistency_level="Strong")
        if self.p.uri is not None:
            closers.append(lambda c=client, name=self._collection: c.drop_collection(name))
        stored = {f: finite_times(v) for f, v in window.items()}
        for lo in range(0, len(vectors), INSERT_BATCH):
            hi = min(len(vectors), lo + INSERT_BATCH)
            client.insert(self._collection, [{"row": i, "vector": vectors[i].tolist(),
                                              **{f: float(v[i]) for f, v in stored.items()}} for i in range(lo, hi)])
        client.flush(self._collection)  # every row in a sealed segment, which the index covers
        # Index after the rows, then load: load builds every segment's index before it returns. Milvus Lite
        # builds it there, so the client is not asked to wait (its wait polls AllocTimestamp, which Lite does not
        # implement, and sleeps 0.5 s); a server is waited for.
        index = client.prepare_index_params()
        if self.p.mode == "exact":
            index.add_index("vector", index_type="FLAT", metric_type="IP")
        else:
            index.add_index("vector", index_type="HNSW", metric_type="IP",
                            params={"M": self.p.hnsw_m, "efConstruction": self.p.hnsw_ef_construction})
        client.create_index(self._collection, index, sync=not uri.endswith(".db"))
        client.load_collection(self._collection)
        self._version = f"pymilvus {pymilvus.__version__}" + (f", milvus-lite {_lite_version()}"
                                                              if self.p.uri is None or uri.endswith(".db") else "")
        self._index_desc = {k: v for k, v in client.describe_index(self._collection, "vector").items()
                            if isinstance(v, (str, int, float, bool)) or v is None}

    def _query(self, vector: np.ndarray, as_of: float, n: int) -> tuple[np.ndarray, np.ndarray]:
        params = {"metric_type": "IP"}
        if self.p.mode == "ann":
            params["params"] = {"ef": max(self.p.hnsw_ef, n)}
        res = self._client.search(self._collection, data=[vector.tolist()], limit=n, output_fields=["row"],
                                  filter=expr_in_force(as_of),
                                  search_params=params)
        hits = res[0]
        rows = np.array([int(h["row"]) for h in hits], dtype=np.int64)
        return rows, np.array([float(h["distance"]) for h in hits], dtype=np.float64)

    def _store_info(self) -> dict:
        p = self.p
        if p.mode == "exact":
            search = {"index": "FLAT", "how": "brute force over the rows the filter keeps (exact)"}
        else:
            search = {"index": "HNSW", "M": p.hnsw_m, "efConstruction": p.hnsw_ef_construction,
                      "ef": f"max({p.hnsw_ef}, k + tie margin)"}
        if hasattr(self, "_index_desc"):
            search["described"] = self._index_desc
        return {"store": getattr(self, "_version", "(not indexed)"), "mode": p.mode, "search": search,
                "server": "Milvus Lite in a temporary folder" if p.uri is None else p.uri,
                "filter": "created_at <= T and valid_from <= T and valid_to > T",
                "metric": "IP (distance = inner product, the score as it is)",
                "columns": {"created_at": "DOUBLE (float64) days since epoch",
                            "valid_from": "DOUBLE (float64) days since epoch",
                            "valid_to": "DOUBLE (float64) days since epoch"},
                "open_window": "valid_to = +inf stored as 1.7976931348623157e308 (the largest float64), -inf as its "
                               "negative"}


def _release_lite(path: str) -> None:
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(path)


def _lite_version() -> str:
    try:
        import milvus_lite
        return str(milvus_lite.__version__)
    except ImportError:  # pragma: no cover - a server uri without milvus-lite installed
        return "not installed"
