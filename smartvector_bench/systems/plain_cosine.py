"""Plain cosine RAG: exact FAISS inner product on normalised embeddings.

Reported confidence: the top-1 cosine clipped to [0, 1].
"""

from __future__ import annotations

import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.index import FlatIndex
from smartvector_bench.core.run import Run, rank_by_score
from smartvector_bench.systems.cosine_baseline import cosine_confidence

_TIE_MARGIN = 16  # fetch a few extra hits so ties at rank k are broken by our rule, not FAISS's


class PlainCosine:
    name = "plain_cosine"

    def __init__(self, name: str = "plain_cosine"):  # no parameters (an unknown key is refused)
        self.name = name

    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        self._index = FlatIndex(vectors)

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **_ignored) -> Run:
        scores, ids = self._index.search(query_vectors, k + _TIE_MARGIN)
        ranked, top = rank_by_score(scores, k, candidates=ids)
        return Run(self.name, ranked, top, cosine_confidence(ranked, top))

    def describe(self) -> dict:
        return {"confidence": "top-1 cosine clipped to [0, 1]"}
