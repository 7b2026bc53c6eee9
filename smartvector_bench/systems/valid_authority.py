"""``valid_authority``: the validity window, then cosine weighted by the source's authority, with the one weight
fitted on the dev split (what a practitioner tries right after window + cosine).

Among the chunks in force at the query's as_of (``created_at <= as_of``, ``valid_from <= as_of < valid_to``), the
score is

    s(q, c) = cos(q, c) + alpha * authority(c)

ranked descending, ties to the lower corpus index. ``alpha = 0`` is ``valid_cosine``; a large ``alpha`` ranks by
authority first, cosine within equal authority. The sum keeps its meaning when a cosine is negative (a product
with authority would reverse it). ``alpha`` is :class:`~smartvector_bench.systems.base.FitsOnDev`: the harness
(``experiments/tuning.py``) judges each value of ``alphas`` on the dev queries (highest dev top-1, ties: dev
MRR@10, then the smaller alpha) and the winner is reported in ``describe()["tuning"]``. It never sees a label.
Reported confidence: the top-1's cosine clipped to [0, 1] (as valid_cosine), not the fused score.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.run import Run, rank_by_score
from smartvector_bench.systems.cosine_baseline import CosineBaseline, ranked_cosine_confidence
from smartvector_bench.systems.valid_cosine import in_force, require_in_force


def authority_weighted(cosine: np.ndarray, authority: np.ndarray, alpha: float) -> np.ndarray:
    """s = cos + alpha * authority (module docstring); ``-inf`` cosines (excluded chunks) stay ``-inf``."""
    return cosine + alpha * np.asarray(authority, dtype=np.float64)[None, :]


@dataclass(frozen=True)
class ValidAuthorityParams:
    alpha: float = 0.0  # the weight used before fitting (and when the dataset has no dev split)
    alphas: tuple[float, ...] = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)  # fitted on dev, in this order


class ValidAuthority(CosineBaseline):
    name = "valid_authority"
    PARAMS = ValidAuthorityParams

    def __init__(self, name: str | None = None, **params):
        if isinstance(params.get("alphas"), (list, tuple)):
            params["alphas"] = tuple(params["alphas"])
        super().__init__(name, **params)
        where = f"retrievers.{self.name}"
        grid = self.p.alphas
        if not isinstance(grid, tuple) or not grid or not all(
                isinstance(a, (int, float)) and not isinstance(a, bool) and np.isfinite(a) and a >= 0 for a in grid):
            raise BenchError(f"{where}.alphas={list(grid) if isinstance(grid, tuple) else grid!r}: must be a "
                             f"non-empty list of finite numbers >= 0")
        if not np.isfinite(self.p.alpha) or self.p.alpha < 0:
            raise BenchError(f"{where}.alpha={self.p.alpha!r}: must be a finite number >= 0")
        self.alpha = float(self.p.alpha)
        self.tuning: dict | None = None

    def check_dataset(self, corpus: Corpus) -> None:
        require_in_force(self.name, corpus, "it keeps the chunks in force at as_of and weighs them by their source's "
                         "authority", extra=("authority",))

    # -- FitsOnDev ------------------------------------------------------------------------------------------------
    def stages(self) -> list[dict[str, list]]:
        return [{"alpha": [float(a) for a in self.p.alphas]}]

    def candidate(self, params: dict) -> tuple["ValidAuthority", bool]:
        cand = copy.copy(self)
        cand.alpha = float(params.get("alpha", self.alpha))
        return cand, True  # a flat index over the corpus: cheap to build for each candidate

    def adopt(self, params: dict, report: dict) -> None:
        self.alpha = float(params.get("alpha", self.alpha))
        self.tuning = {"fitted": {"alpha": self.alpha}, **report}

    # -- Retriever ------------------------------------------------------------------------------------------------
    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **labels) -> Run:
        cos = self.cosine_where(query_vectors, in_force(self.corpus, as_of))
        ranked, top = rank_by_score(authority_weighted(cos, self.corpus.authority, self.alpha), k)
        return Run(self.name, ranked, top, ranked_cosine_confidence(cos, ranked))

    def describe(self) -> dict:
        return {"confidence": "top-1 cosine clipped to [0, 1]",
                "rule": f"cosine + alpha * authority among the chunks in force at as_of; alpha = {self.alpha:g}",
                "alpha": self.alpha,
                "tuning": self.tuning if self.tuning is not None else "not fitted (no dev split)"}
