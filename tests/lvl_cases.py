"""Shared by the LiveVectorLake tests split by module (tests/test_lvl_cdc.py, tests/test_lvl_query_tiers.py,
tests/test_lvl_recovery.py, tests/test_lvl_retriever.py): the hashing embedder, an ingest that records what
it embedded, the ``lake`` fixture and a small history of two documents."""

from __future__ import annotations

import pytest

from smartvector_bench.core.embedding import HashingEmbedder
from smartvector_bench.systems.livevectorlake import LiveVectorLake

DIM = 64
EMB = HashingEmbedder(DIM)


class Recorder:
    """vectors_for that records which texts it was asked to embed."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, texts):
        self.calls.append(list(texts))
        return EMB.encode(list(texts))

    @property
    def texts(self) -> list[str]:
        return [t for c in self.calls for t in c]


def ingest(lake, doc, version, paragraphs, at):
    rec = Recorder()
    res = lake.ingest_document(doc, version, "\n\n".join(paragraphs), at, rec)
    return res, rec


@pytest.fixture
def lake(tmp_path):
    return LiveVectorLake.open(tmp_path / "lake", dim=DIM)


def _history(lake):
    ingest(lake, "a", 1, ["A one.", "A two.", "A three."], 1.0)
    ingest(lake, "b", 1, ["B one.", "A two."], 2.0)
    ingest(lake, "a", 2, ["A one.", "A two, changed.", "A three.", "A four."], 3.0)
    ingest(lake, "b", 2, ["A two."], 4.0)
    ingest(lake, "a", 3, ["A three.", "A one."], 5.0)
