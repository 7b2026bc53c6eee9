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
from smartvector_bench.core.index import FlatIndex
from smartvector_bench.core.run import Run, rank_by_score
from smartvector_bench.core.settings import section
from smartvector_bench.systems.base import require_fields


@dataclass(frozen=True)
class MetadataFilterParams:
    candidates: int = 10  # how many of the most similar valid chunks compete on authority
    POSITIVE: ClassVar[tuple[str, ...]] = ("candidates",)


class MetadataFilter:
    name = "metadata_filter"

    def __init__(self, name: str = "metadata_filter", **params):
        self.name = name
        self.p = section(MetadataFilterParams, params, f"retrievers.{name}")

    def check_dataset(self, corpus: Corpus) -> None:
        require_fields(self.name, corpus, ("created_at", "valid_from", "valid_to", "authority"),
                       "it keeps the chunks valid at as_of and puts the most authoritative first")

    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        self.corpus = corpus
        self._index = FlatIndex(vectors)

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **labels) -> Run:
        c = self.corpus
        cos = self._index.all_scores(query_vectors)
        t = np.asarray(as_of, dtype=np.float64)[:, None]
        valid = (c.valid_from[None, :] <= t) & (t < c.valid_to[None, :]) & (c.created_at[None, :] <= t)
        cos = np.where(valid, cos, -np.inf)
        depth = max(k, self.p.candidates)
        ranked, top = rank_by_score(cos, depth)
        # Stable re-rank of the candidate head by authority (descending); -1 padding stays last.
        head = ranked[:, : self.p.candidates]
        auth = np.where(head >= 0, c.authority[np.where(head >= 0, head, 0)], -np.inf)
        order = np.argsort(-auth, axis=1, kind="stable")
        ranked[:, : self.p.candidates] = np.take_along_axis(head, order, axis=1)
        top[:, : self.p.candidates] = np.take_along_axis(top[:, : self.p.candidates], order, axis=1)
        ranked, top = ranked[:, :k], top[:, :k]
        confidence = np.where(ranked[:, 0] >= 0, np.clip(top[:, 0], 0.0, 1.0), np.nan)
        return Run(self.name, ranked, top, confidence)

    def describe(self) -> dict:
        return {"confidence": "top-1 cosine clipped to [0, 1]",
                "rule": f"valid at as_of; the most authoritative of the {self.p.candidates} most similar first"}
