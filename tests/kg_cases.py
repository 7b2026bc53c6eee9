"""Shared by the kg_smartvector tests split by module (tests/test_kg_store.py, tests/test_kg_pagerank.py):
the ``kg`` fixture, a KnowledgeGraph on a fresh SQLite file, closed afterwards."""

from __future__ import annotations

import pytest

from smartvector_bench.systems.kg_smartvector.store import KnowledgeGraph


@pytest.fixture
def kg(tmp_path):
    graph = KnowledgeGraph(tmp_path / "kg.sqlite")
    yield graph
    graph.close()
