"""Per-query ranking outcomes. Every function returns one value per query (shape ``(Q,)``).

Conventions shared by all functions here:

* ``ranked`` is ``(Q, k)`` int64 corpus indices, best first, ``-1`` where the system returned fewer results;
  ``gold`` is ``(Q,)`` int64, the single relevant corpus index of each query (BEIR qrels with one positive).
* Ranks are 1-based. Padding (``-1``) never matches anything, so a query with no result is wrong,
  has reciprocal rank 0 and recall 0.
* If a system lists the same index twice, the first (best) occurrence counts.
"""

from __future__ import annotations

import numpy as np

from smartvector_bench.core.csr import Ragged


def _check_ranked(ranked: np.ndarray, gold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ranked = np.asarray(ranked, dtype=np.int64)
    gold = np.asarray(gold, dtype=np.int64)
    if ranked.ndim != 2 or gold.ndim != 1 or ranked.shape[0] != gold.shape[0]:
        raise ValueError(f"ranked must be (Q, k) and gold (Q,); got {ranked.shape} and {gold.shape}")
    return ranked, gold


def _gold_hits(ranked: np.ndarray, gold: np.ndarray, k: int) -> np.ndarray:
    """``(Q, min(k, width))`` bool: ``ranked[q, r] == gold[q]`` within the first k, padding excluded."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    ranked, gold = _check_ranked(ranked, gold)
    top = ranked[:, :k]
    return (top == gold[:, None]) & (top >= 0)


def correct_at_1(ranked: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """``(Q,)`` bool: the top-1 result is the gold chunk. No result (``ranked[:, 0] == -1``) is wrong."""
    ranked, gold = _check_ranked(ranked, gold)
    if ranked.shape[1] == 0:  # a zero-width run returned nothing for anyone
        return np.zeros(len(gold), dtype=bool)
    top1 = ranked[:, 0]
    return (top1 >= 0) & (top1 == gold)


def in_sets(top1: np.ndarray, sets: Ragged) -> np.ndarray:
    """``(Q,)`` bool: ``top1[q]`` is in row ``q`` of ``sets`` (stale or rumour ids). ``-1`` never is."""
    top1 = np.asarray(top1, dtype=np.int64)
    if top1.ndim != 1 or top1.shape[0] != sets.n_rows:
        raise ValueError(f"top1 must be (Q,) with Q = sets.n_rows = {sets.n_rows}; got {top1.shape}")
    # Guard -1 explicitly: a malformed set holding -1 must not turn "no result" into a hit.
    return (top1 >= 0) & sets.contains(top1)


def reciprocal_rank(ranked: np.ndarray, gold: np.ndarray, k: int = 10) -> np.ndarray:
    """``(Q,)`` float: ``1 / rank`` of gold among the first ``k`` results (rank 1 = best), else 0.0.

    The mean over queries is MRR@k.
    """
    hits = _gold_hits(ranked, gold, k)
    found = hits.any(axis=1)
    rank = hits.argmax(axis=1) + 1  # argmax = first True = best-ranked occurrence
    return np.where(found, 1.0 / rank, 0.0)


def recall_at_k(ranked: np.ndarray, gold: np.ndarray, k: int = 5) -> np.ndarray:
    """``(Q,)`` float: 1.0 if gold is among the first ``k`` results, else 0.0 (one gold per query)."""
    return _gold_hits(ranked, gold, k).any(axis=1).astype(np.float64)
