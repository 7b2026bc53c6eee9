"""``hybrid_valid``: BM25 and dense cosine fused by reciprocal rank fusion within the validity window, the usual
production hybrid.

Among the chunks in force at the query's as_of (``created_at <= as_of``, ``valid_from <= as_of < valid_to``), each
of the two retrievers ranks its ``depth`` best (BM25: ``bm25s`` as in ``bm25_valid``, only chunks sharing a term
with the query; dense: exact FAISS cosine as in ``valid_cosine``), and a chunk's fused score is

    RRF(c) = sum over the lists L holding c of 1 / (rrf_k + rank_L(c))        (Cormack, Clarke and Buettcher 2009,
                                                                              "Reciprocal rank fusion outperforms
                                                                              Condorcet and individual rank
                                                                              learning methods", SIGIR, eq. 1)

with 1-based ranks and ``rrf_k = 60`` (the paper's constant). Ranked by RRF descending, ties to the lower corpus
index. ``ranx`` (the usual fusion package) is not on this machine's package registry, so the one-line formula is
:func:`reciprocal_rank_fusion` here, tested against a hand computation. Reported confidence: the top-1's cosine
clipped to [0, 1] (as valid_cosine; an RRF score is not on a probability scale).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smartvector_bench.core.dataset import Corpus
from smartvector_bench.core.index import FlatIndex
from smartvector_bench.core.run.rounding import rank_bounds, score_noise
from smartvector_bench.core.run import Run, rank_by_score
from smartvector_bench.core.settings import section
from smartvector_bench.systems.bm25 import BM25, query_texts
from smartvector_bench.systems.cosine_baseline import ranked_cosine_confidence
from smartvector_bench.systems.valid_cosine import in_force, require_in_force


def reciprocal_rank_fusion(rankings: list[np.ndarray], n: int, rrf_k: float = 60.0) -> np.ndarray:
    """(Q, n) RRF scores of ``rankings`` (each (Q, depth) of corpus rows, best first, -1 = padding); a row in no
    list scores 0 (Cormack et al. 2009, eq. 1: sum of 1 / (rrf_k + rank), ranks from 1)."""
    q = rankings[0].shape[0] if rankings else 0
    out = np.zeros((q, n), dtype=np.float64)
    for ranked in rankings:
        ranked = np.asarray(ranked, dtype=np.int64)
        rows, cols = np.nonzero(ranked >= 0)
        np.add.at(out, (rows, ranked[rows, cols]), 1.0 / (rrf_k + cols + 1.0))
    return out


def rrf_bounds(lists: list[np.ndarray], depth: int, rrf_k: float, ranked: np.ndarray,
               cosine: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every RRF score each hit of ``ranked`` (Q, k) could take on another CPU, and the confidence (the top-1's
    cosine clipped to [0, 1]): ((Q, k, 2), (Q, 2)). ``lists`` are the fused lists' (Q, N) scores (-inf =
    excluded); a score may move by ``core.run.rounding.score_noise``, so each item's rank in a list lies within
    ``rank_bounds`` and its RRF within the sums of 1 / (rrf_k + rank) over those ranks (0 beyond ``depth``). A hit
    whose RRF could be 0 could drop out: lo = -inf. The confidence's top-1 is any item whose RRF could reach the
    largest sure RRF."""
    q, n = cosine.shape
    bounds = np.full((*ranked.shape, 2), np.nan)
    conf = np.full((q, 2), np.nan)

    def f(r: np.ndarray) -> np.ndarray:  # as reciprocal_rank_fusion computes it, 0 beyond depth
        return np.where(r <= depth, 1.0 / (rrf_k + (r - 1) + 1.0), 0.0)

    for i in range(q):
        lo, hi = np.zeros(n), np.zeros(n)
        for scores in lists:  # added in list order, as reciprocal_rank_fusion does
            row = scores[i]
            live = np.flatnonzero(np.isfinite(row))
            best, worst = rank_bounds(row, row[live])
            lo[live] += f(worst)
            hi[live] += f(best)
        hits = ranked[i][ranked[i] >= 0]
        if not len(hits):
            continue
        bounds[i, :len(hits), 0] = np.where(lo[hits] > 0, lo[hits], -np.inf)
        bounds[i, :len(hits), 1] = hi[hits]
        tops = np.flatnonzero((hi > 0) & (hi >= lo.max()))
        c = cosine[i, tops]
        conf[i] = np.clip([np.min(c - score_noise(c)), np.max(c + score_noise(c))], 0.0, 1.0)
    return bounds, conf


@dataclass(frozen=True)
class HybridParams:
    depth: int = 100       # how many of each list are fused
    rrf_k: int = 60        # RRF's rank offset (Cormack et al. 2009), a whole number of ranks
    k1: float = 1.5        # BM25 term-frequency saturation
    b: float = 0.75        # BM25 length normalisation, in [0, 1]
    POSITIVE = ("depth", "rrf_k")


class HybridValid:
    name = "hybrid_valid"

    def __init__(self, name: str = "hybrid_valid", **params):
        self.name = name
        self.p = section(HybridParams, params, f"retrievers.{name}")
        self._bm25 = BM25(name, k1=self.p.k1, b=self.p.b)  # checks b

    def check_dataset(self, corpus: Corpus) -> None:
        require_in_force(self.name, corpus, "it keeps the chunks in force at as_of")

    def index(self, corpus: Corpus, vectors: np.ndarray, serve_time: float) -> None:
        self.corpus = corpus
        self._index = FlatIndex(vectors)
        self._bm25.index(corpus, vectors, serve_time)

    def search(self, query_vectors: np.ndarray, as_of: np.ndarray, k: int,
               texts: list[str] | None = None, **labels) -> Run:
        as_of = query_texts(self.name, texts, as_of)
        keep = in_force(self.corpus, as_of)
        cos = np.where(keep, self._index.all_scores(query_vectors), -np.inf)
        bm25 = self._bm25._scores(texts)
        bm25 = np.where(keep & (bm25 > 0), bm25, -np.inf)  # a chunk sharing no term is not a BM25 hit
        depth = min(self.p.depth, len(self.corpus))
        dense_ranked, _ = rank_by_score(cos, depth)
        bm25_ranked, _ = rank_by_score(bm25, depth)
        fused = reciprocal_rank_fusion([dense_ranked, bm25_ranked], len(self.corpus), self.p.rrf_k)
        ranked, top = rank_by_score(np.where(fused > 0, fused, -np.inf), k)
        bounds, conf = rrf_bounds([cos, bm25], depth, self.p.rrf_k, ranked, cos)
        return Run(self.name, ranked, top, ranked_cosine_confidence(cos, ranked), bounds, conf)

    def describe(self) -> dict:
        return {"confidence": "top-1 cosine clipped to [0, 1]",
                "rule": f"reciprocal rank fusion (rrf_k={self.p.rrf_k}) of the {self.p.depth} best by cosine and "
                        f"by BM25 (k1={self.p.k1}, b={self.p.b}) among the chunks in force at as_of"}
