"""SmartVector lifecycle statuses, judged at a query's time from columnar metadata.

UNCONSOLIDATED (ingested after the last consolidation, queryable) -> ACTIVE (consolidated) ->
DORMANT (live confidence below the threshold: searchable, deprioritised) / DEPRECATED (superseded by a
newer version that is in force) -> ARCHIVED (kept for audit; assigned by the lifecycle replay).
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np


class Status(IntEnum):
    UNCONSOLIDATED = 0
    ACTIVE = 1
    DORMANT = 2
    DEPRECATED = 3
    ARCHIVED = 4


STATUS_NAMES = tuple(s.name for s in Status)


def deprecated_at(superseded_by: np.ndarray, valid_from: np.ndarray, as_of: np.ndarray) -> np.ndarray:
    """(Q, N): v has a successor that is in force at t (its valid_from <= t)."""
    has = superseded_by >= 0
    succ_from = np.where(has, valid_from[np.where(has, superseded_by, 0)], np.inf)
    return np.asarray(as_of, dtype=np.float64)[:, None] >= succ_from[None, :]


def statuses_at(superseded_by: np.ndarray, valid_from: np.ndarray, created_at: np.ndarray,
                consolidated_at: float, dormant: np.ndarray, archived: np.ndarray, as_of: np.ndarray) -> np.ndarray:
    """(Q, N) Status codes; precedence ARCHIVED > DEPRECATED > DORMANT > UNCONSOLIDATED > ACTIVE."""
    q, n = len(as_of), len(valid_from)
    out = np.full((q, n), Status.ACTIVE, dtype=np.int8)
    out[:, created_at > consolidated_at] = Status.UNCONSOLIDATED
    out[dormant] = Status.DORMANT
    out[deprecated_at(superseded_by, valid_from, as_of)] = Status.DEPRECATED
    out[:, archived] = Status.ARCHIVED
    return out
