"""LiveVectorLake (arXiv 2601.05270) on a real Delta Lake table: paragraph-level CDC with per-document
SHA-256 hashes, a Delta Lake cold tier holding every paragraph version with its validity window, a hot tier
holding the current paragraphs (a Milvus collection, as in the paper; FAISS for the perf bench), a
cold-then-hot write order with recovery, and as-of queries that filter by validity before ranking.

- :mod:`.cold`: the Delta table (schema, row key, one commit per ingest, cached snapshot, as-of filter);
- :mod:`.hot_milvus`: the default hot tier, the current rows in a Milvus collection (Milvus Lite in the lake
  folder, or a server), committed by an atomically written state file; :mod:`.milvus_conn`: its connections;
- :mod:`.hot`: the FAISS hot tier (``hot_index: flat | hnsw``), same interface and state file;
- :mod:`.rows`: what an ingest and a query return, and the CDC rule per paragraph position;
- :mod:`.batch`: the CDC of a batch of versions, planned in memory and written as one commit;
- :mod:`.lake`: :class:`LiveVectorLake`, the store (ingest, recovery, queries).

The benchmark system built on it is ``smartvector_bench.systems.livevectorlake.retriever``.
"""

from smartvector_bench.systems.livevectorlake.batch import BatchItem, BatchResult
from smartvector_bench.systems.livevectorlake.cold import SCHEMA, STATUSES, valid_at
from smartvector_bench.systems.livevectorlake.lake import LiveVectorLake
from smartvector_bench.systems.livevectorlake.rows import Hit, IngestResult, QueryResult, position_classes

__all__ = ["SCHEMA", "STATUSES", "BatchItem", "BatchResult", "Hit", "IngestResult", "LiveVectorLake", "QueryResult",
           "position_classes", "valid_at"]
