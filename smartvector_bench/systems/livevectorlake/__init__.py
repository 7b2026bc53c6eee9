"""LiveVectorLake (arXiv 2601.05270) on a real Delta Lake table: paragraph-level CDC with per-document
SHA-256 hashes, a Delta Lake cold tier holding every paragraph version with its validity window, a FAISS hot
tier holding the current paragraphs, a cold-then-hot write order with recovery, and as-of queries that
filter by validity before ranking.

- :mod:`.cold`: the Delta table (schema, row key, one commit per ingest, cached snapshot, as-of filter);
- :mod:`.hot`: the FAISS index of current rows and its atomically written state file;
- :mod:`.rows`: what an ingest and a query return, and the CDC rule per paragraph position;
- :mod:`.lake`: :class:`LiveVectorLake`, the store (ingest, recovery, queries).

The benchmark system built on it is ``smartvector_bench.systems.livevectorlake.retriever``.
"""

from smartvector_bench.systems.livevectorlake.cold import SCHEMA, STATUSES, valid_at
from smartvector_bench.systems.livevectorlake.lake import LiveVectorLake
from smartvector_bench.systems.livevectorlake.rows import Hit, IngestResult, QueryResult, position_classes

__all__ = ["SCHEMA", "STATUSES", "Hit", "IngestResult", "LiveVectorLake", "QueryResult", "position_classes",
           "valid_at"]
