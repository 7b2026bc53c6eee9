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
from smartvector_bench.core.run import Run
from smartvector_bench.systems.base import require_fields
from smartvector_bench.systems.cosine_baseline import CosineBaseline, rank_head_by
from smartvector_bench.systems.cosine_baseline import cosine_confidence


@dataclass(frozen=True)
class RecentCosineParams:
    candidates: int = 10  # how many of the most similar existing chunks are re-ordered by recency
    POSITIVE: ClassVar[tuple[str, ...]] = ("candidates",)


class RecentCosine(CosineBaseline):
    name = "recent_cosine"
    PARAMS = RecentCosineParams
    rank_key = "created_at among the most similar candidates"  # RanksByKey: the score is the cosine

    def check_dataset(self, corpus: Corpus) -> None:
        require_fields(self.name, corpus, ("created_at",), "it orders the candidates by creation time")

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **labels) -> Run:
        t = np.asarray(as_of, dtype=np.float64).reshape(-1)[:, None]
        cos = self.cosine_where(query_vectors, self.corpus.created_at[None, :] <= t)
        ranked, top = rank_head_by(cos, self.corpus.created_at, self.p.candidates, k)
        return Run(self.name, ranked, top, cosine_confidence(ranked, top))

    def describe(self) -> dict:
        return {"confidence": "top-1 cosine clipped to [0, 1]",
                "rule": f"of the {self.p.candidates} most similar chunks created by as_of (no validity filter), "
                        "the newest (created_at) first, cosine breaking ties; the rest by cosine"}
