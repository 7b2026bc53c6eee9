"""Incremental index updates after a document edit: one module per strategy, one protocol.

``apply(store, new_text, embed) -> UpdateResult`` updates a :class:`~.store.DocumentStore` in place;
``embed`` receives only the chunk texts the strategy re-embeds. Every strategy leaves the store exactly
as a from-scratch rebuild would (``store.rebuild`` / ``store.compare``).

- ``full``: re-chunk and re-embed the whole document (baseline);
- ``cdc``: LiveVectorLake's per-document content hashing (unchanged / moved / modified / new / deleted);
- ``surgical``: SmartVector's diff-based update, with exact offsets.
"""

from __future__ import annotations

from collections.abc import Callable

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.updates import cdc, full, surgical
from smartvector_bench.systems.updates.store import (
    CHUNKERS, Chunker, DocumentStore, EmbedFn, UpdateResult, chunk_hash, compare, normalise, rebuild,
)

Strategy = Callable[[DocumentStore, str, EmbedFn], UpdateResult]
STRATEGIES: dict[str, Strategy] = {"full": full.apply, "cdc": cdc.apply, "surgical": surgical.apply}


def get_strategy(name: str) -> Strategy:
    if name not in STRATEGIES:
        raise BenchError(f"strategy {name!r}: unknown; allowed: {', '.join(STRATEGIES)}")
    return STRATEGIES[name]


__all__ = [
    "CHUNKERS",
    "STRATEGIES",
    "Chunker",
    "DocumentStore",
    "EmbedFn",
    "UpdateResult",
    "chunk_hash",
    "compare",
    "get_strategy",
    "normalise",
    "rebuild",
]
