"""Metadata filter: the VersionRAG-style version filter on the document store's metadata (no labels).

Among the chunks valid at the query's as_of (valid_from <= as_of < valid_to, and created by then), rank by
cosine; then, among the ``candidates`` most similar of those, the most authoritative source comes first
(a stable re-rank by authority, cosine order within equal authority). It reads only what a document store
holds (validity windows, authority), never the ground-truth labels, and never returns a chunk outside its
validity window (temporal leakage 0 by construction). Reported confidence: the top-1 cosine clipped to [0, 1].
(This was the benchmark's ``oracle`` before the label-reading oracle replaced it.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.run import Run
from smartvector_bench.systems.cosine_baseline import CosineBaseline, rank_head_by
from smartvector_bench.systems.cosine_baseline import cosine_confidence
from smartvector_bench.systems.valid_cosine import in_force, require_in_force


@dataclass(frozen=True)
class MetadataFilterParams:
    candidates: int = 10  # how many of the most similar valid chunks compete on authority
    POSITIVE: ClassVar[tuple[str, ...]] = ("candidates",)


class MetadataFilter(CosineBaseline):
    name = "metadata_filter"
    PARAMS = MetadataFilterParams
    rank_key = "authority among the most similar candidates"  # RanksByKey: the score is the cosine

    def check_dataset(self, corpus: Corpus) -> None:
        require_in_force(self.name, corpus, "it keeps the chunks valid at as_of and puts the most authoritative "
                         "first", extra=("authority",))

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **labels) -> Run:
        cos = self.cosine_where(query_vectors, in_force(self.corpus, as_of))
        ranked, top = rank_head_by(cos, self.corpus.authority, self.p.candidates, k)
        return Run(self.name, ranked, top, cosine_confidence(ranked, top))

    def describe(self) -> dict:
        return {"confidence": "top-1 cosine clipped to [0, 1]",
                "rule": f"valid at as_of; the most authoritative of the {self.p.candidates} most similar first"}
