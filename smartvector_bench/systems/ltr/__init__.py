"""``ltr``: learning to rank over document-store features, trained on the dev split's qrels (retriever.py)."""

from smartvector_bench.systems.ltr.retriever import LTR

__all__ = ["LTR"]
