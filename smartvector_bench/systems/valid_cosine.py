"""Validity-filtered cosine: the obvious version-aware baseline.

Exact cosine (FAISS inner product on normalised embeddings) over the chunks in force at each query's as_of
(``created_at <= as_of`` and ``valid_from <= as_of < valid_to``); ranked by cosine, ties to the lower corpus
index. It never returns a chunk outside its validity window or created after as_of.
Reported confidence: the top-1 cosine clipped to [0, 1] (NaN when nothing is in force).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.run import Run, rank_by_score
from smartvector_bench.systems.base import require_fields
from smartvector_bench.systems.cosine_baseline import CosineBaseline, cosine_confidence


def in_force(corpus: Corpus, as_of: np.ndarray) -> np.ndarray:
    """(Q, N) bool: chunk ``i`` is in force at ``as_of[q]`` (created by then and inside its validity window)."""
    t = np.asarray(as_of, dtype=np.float64).reshape(-1)[:, None]
    return ((corpus.created_at[None, :] <= t) & (corpus.valid_from[None, :] <= t)
            & (t < corpus.valid_to[None, :]))


@dataclass(frozen=True)
class ValidCosineParams:
    pass  # no settings; the section still rejects unknown keys


IN_FORCE_FIELDS = ("created_at", "valid_from", "valid_to")  # what in_force reads


def require_in_force(system: str, corpus: Corpus, why: str, extra: tuple[str, ...] = ()) -> None:
    """``check_dataset`` of a system that reads validity windows. A store that gives only ``created_at``
    (``dataset.metadata=created_only``) is served in a degraded mode: each window holds the loader's defaults,
    [created_at, +inf), so "in force" is "created by as_of". Without ``created_at`` the system refuses, naming
    every window field (a loaded dataset gives the three together or none: the message is as before)."""
    need = ("created_at",) if "created_at" in corpus.present else IN_FORCE_FIELDS
    require_fields(system, corpus, (*need, *extra), why)


class ValidCosine(CosineBaseline):
    name = "valid_cosine"
    PARAMS = ValidCosineParams

    def check_dataset(self, corpus: Corpus) -> None:
        require_in_force(self.name, corpus, "it keeps the chunks in force at as_of")

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **labels) -> Run:
        cos = self.cosine_where(query_vectors, in_force(self.corpus, as_of))
        ranked, top = rank_by_score(cos, k)
        return Run(self.name, ranked, top, cosine_confidence(ranked, top))

    def describe(self) -> dict:
        return {"confidence": "top-1 cosine clipped to [0, 1]",
                "rule": "cosine among the chunks in force at as_of (created_at <= as_of, "
                        "valid_from <= as_of < valid_to)"}
