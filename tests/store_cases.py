"""Shared by the VectorStore and ConsolidationAgent tests (tests/test_store.py,
tests/test_consolidation_agent.py): a corpus of unrelated vectors, event-log filters, and a store + agent
advanced over time."""

from __future__ import annotations

import numpy as np

from smartvector_bench.systems.smartvector.consolidation import ConsolidationAgent, ConsolidationParams, ingest_until
from smartvector_bench.core.dataset import Corpus
from smartvector_bench.systems.smartvector.signals.confidence import ConfidenceParams
from smartvector_bench.systems.smartvector.store import StoreParams, VectorStore

from .factories import make_corpus

INF = np.inf


def one(authority: float = 0.9, created: float = 0.0, n: int = 1) -> Corpus:
    """n unrelated vectors (no shared words: no detected dependencies, no contradictions)."""
    return make_corpus([{"text": f"w{i}a w{i}b", "doc": f"d{i}", "authority": authority, "created": created}
                        for i in range(n)])


def kinds(store: VectorStore, kind: str, vector: int | None = None) -> list[dict]:
    return [e for e in store.events if e["kind"] == kind and (vector is None or e["vector"] == vector)]


def statuses(store: VectorStore, vector: int) -> list[tuple[float, str | None, str, str]]:
    return [(e["time"], e["old"], e["new"], e["cause"]) for e in kinds(store, "status", vector)]


class Timeline:
    """A store + agent advanced by ingest_until and agent runs at given times (as the replay does)."""

    def __init__(self, corpus: Corpus, params: ConsolidationParams | None = None, vectors=None, **store_params):
        self.store = VectorStore(corpus, ConfidenceParams(), StoreParams(**store_params))
        self.agent = ConsolidationAgent(corpus, params or ConsolidationParams(), vectors)
        self.since = -INF

    def run(self, *times: float) -> Timeline:
        for t in times:
            ingest_until(self.store, t, since=self.since)
            self.since = t
            self.agent.run(self.store, t)
        return self
