"""Recency re-rank: the newest of the most similar chunks first.

Among the chunks that exist at the query's as_of (``created_at <= as_of``; no validity filter), take the
``candidates`` most similar by cosine, then order them by ``created_at`` descending (cosine breaks ties, then
the lower corpus index). When k > candidates, the positions after the candidates follow by cosine.
Reported confidence: the top-1's cosine clipped to [0, 1] (NaN when nothing exists yet).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.index import FlatIndex
from smartvector_bench.core.run import Run, rank_by_score
from smartvector_bench.core.settings import section
from smartvector_bench.systems.base import require_fields
from smartvector_bench.systems.valid_cosine import cosine_confidence


@dataclass(frozen=True)
class RecentCosineParams:
    candidates: int = 10  # how many of the most similar existing chunks are re-ordered by recency
    POSITIVE: ClassVar[tuple[str, ...]] = ("candidates",)


class RecentCosine:
    name = "recent_cosine"

    def __init__(self, name: str = "recent_cosine", **params):
        self.name = name
        self.p = section(RecentCosineParams, params, f"retrievers.{name}")

    def check_dataset(self, corpus: Corpus) -> None:
        require_fields(self.name, corpus, ("created_at",), "it orders the candidates by creation time")

    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        self.corpus = corpus
        self._index = FlatIndex(vectors)

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **labels) -> Run:
        c = self.corpus
        cos = self._index.all_scores(query_vectors)
        t = np.asarray(as_of, dtype=np.float64).reshape(-1)[:, None]
        cos = np.where(c.created_at[None, :] <= t, cos, -np.inf)
        n_head = self.p.candidates
        ranked, top = rank_by_score(cos, max(k, n_head))
        # Stable re-order of the candidate head by created_at (descending): within equal created_at the
        # cosine order (and its lower-index tie rule) stays. -1 padding stays last.
        head = ranked[:, :n_head]
        created = np.where(head >= 0, c.created_at[np.where(head >= 0, head, 0)], -np.inf)
        order = np.argsort(-created, axis=1, kind="stable")
        ranked[:, :n_head] = np.take_along_axis(head, order, axis=1)
        top[:, :n_head] = np.take_along_axis(top[:, :n_head], order, axis=1)
        ranked, top = ranked[:, :k], top[:, :k]
        return Run(self.name, ranked, top, cosine_confidence(ranked, top))

    def describe(self) -> dict:
        return {"confidence": "top-1 cosine clipped to [0, 1]",
                "rule": f"of the {self.p.candidates} most similar chunks created by as_of (no validity filter), "
                        "the newest (created_at) first, cosine breaking ties; the rest by cosine"}
