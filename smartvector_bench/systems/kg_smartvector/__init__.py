"""SmartVector for sqlite-knowledge-graph (seed 003) on a real SQLite file: the schema and its v2 -> v3
migration (``schema``), the knowledge-graph API (``store.KnowledgeGraph``) and graph importance
(``pagerank``)."""

from smartvector_bench.systems.kg_smartvector.pagerank import graph_importance, pagerank
from smartvector_bench.systems.kg_smartvector.schema import DEPENDENCY_TYPES, SCHEMA_VERSION, create_v2, ensure_schema
from smartvector_bench.systems.kg_smartvector.store import KnowledgeGraph, confidence_formula

__all__ = ["DEPENDENCY_TYPES", "SCHEMA_VERSION", "KnowledgeGraph", "confidence_formula", "create_v2",
           "ensure_schema", "graph_importance", "pagerank"]
