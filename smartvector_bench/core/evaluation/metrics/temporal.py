"""Temporal leakage: returned chunks whose validity window does not contain the query's as-of time."""

from __future__ import annotations

import numpy as np


def leaked(ranked: np.ndarray, valid_from: np.ndarray, valid_to: np.ndarray, as_of: np.ndarray,
           k: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """(leaking, returned) counts per query over the first ``k`` ranks.

    A returned chunk leaks when ``as_of`` is outside ``[valid_from, valid_to)`` (a superseded version, or one
    not yet in force: from the query's future). Padding (-1) is not a returned chunk.
    """
    r = np.asarray(ranked)[:, :k]
    returned = r >= 0
    idx = np.where(returned, r, 0)
    t = np.asarray(as_of, dtype=np.float64)[:, None]
    outside = (t < valid_from[idx]) | (t >= valid_to[idx])
    return (outside & returned).sum(axis=1), returned.sum(axis=1)


def leakage_rate(leaking: np.ndarray, returned: np.ndarray) -> float:
    """Pooled share: all leaking chunks over all returned chunks (0.0 when nothing was returned)."""
    total = returned.sum()
    return float(leaking.sum() / total) if total else 0.0
