"""What the exact-cosine baselines that filter or re-order by metadata share (valid_cosine, recent_cosine,
metadata_filter, and plain_cosine and oracle for the confidence): the constructor and index of
:class:`CosineBaseline`, :func:`cosine_confidence` and :func:`rank_head_by`."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.index import FlatIndex
from smartvector_bench.core.run import rank_by_score
from smartvector_bench.core.settings import section


def cosine_confidence(ranked: np.ndarray, top: np.ndarray) -> np.ndarray:
    """Top-1 cosine clipped to [0, 1]; NaN where the system returned nothing."""
    if ranked.shape[1] == 0:
        return np.full(ranked.shape[0], np.nan)
    return np.where(ranked[:, 0] >= 0, np.clip(np.nan_to_num(top[:, 0]), 0.0, 1.0), np.nan)


def ranked_cosine_confidence(cosine: np.ndarray, ranked: np.ndarray) -> np.ndarray:
    """:func:`cosine_confidence` of a ranking ordered by another score: the top-1's cosine (``cosine`` is (Q, N))
    clipped to [0, 1]."""
    top = np.where(ranked >= 0, np.take_along_axis(cosine, np.maximum(ranked, 0), axis=1), np.nan)
    return cosine_confidence(ranked, top)


class CosineBaseline:
    """The configured name, the settings section ``PARAMS`` (checked under ``retrievers.<name>``, unknown keys
    refused), and an index that keeps the corpus and a flat inner-product index over its vectors."""

    name: str
    PARAMS: ClassVar[type]

    def __init__(self, name: str | None = None, **params):
        self.name = type(self).name if name is None else name
        self.p = section(self.PARAMS, params, f"retrievers.{self.name}")

    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        self.corpus = corpus
        self._index = FlatIndex(vectors)

    def cosine_where(self, query_vectors: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """(Q, N) cosine of every query with every chunk, ``-inf`` (never ranked) where ``keep`` is False."""
        return np.where(keep, self._index.all_scores(query_vectors), -np.inf)


def rank_head_by(scores: np.ndarray, key: np.ndarray, n_head: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ranked, top)`` of :func:`~smartvector_bench.core.run.rank_by_score` cut to ``k``, its first ``n_head``
    ranks re-ordered by ``key[chunk]``, descending, before the cut. The sort is stable, so within equal keys the
    cosine order (and its lower-index tie rule) stays; ``-1`` padding stays last. Ranks after ``n_head`` keep
    the score order."""
    ranked, top = rank_by_score(scores, max(k, n_head))
    head = ranked[:, :n_head]
    head_key = np.where(head >= 0, key[np.where(head >= 0, head, 0)], -np.inf)
    order = np.argsort(-head_key, axis=1, kind="stable")
    ranked[:, :n_head] = np.take_along_axis(head, order, axis=1)
    top[:, :n_head] = np.take_along_axis(top[:, :n_head], order, axis=1)
    return ranked[:, :k], top[:, :k]
