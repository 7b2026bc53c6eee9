"""Relational signal (SmartVector reference ``_relational_bonus``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RelationalParams:
    per_edge: float = 0.1
    cap: float = 0.3


def relational_signal(edge_count: np.ndarray, per_edge: float = 0.1, cap: float = 0.3) -> np.ndarray:
    """Paper 2.C, four-signal scoring, Relational ("bonus for vectors with high connectivity in the dependency
    graph"); reference ``_relational_bonus``: R(v) = 0 with no edges,
    else min(cap, per_edge * ln(1 + edges)), edges = depends_on + depended_by."""
    edge_count = np.asarray(edge_count, dtype=np.float64)
    return np.where(edge_count > 0, np.minimum(cap, per_edge * np.log1p(edge_count)), 0.0)
