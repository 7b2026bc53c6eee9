"""RipplePropagator (SmartVector paper): bounded breadth-first search along ``depended_by`` from a changed or
contradicted vector, penalising dependants by penalty / (depth + 1) (0.15 at hop 1, 0.075 at hop 2),
max depth 2; a visited set makes it terminate on cycles."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smartvector_bench.core.csr import Ragged


@dataclass(frozen=True)
class RippleParams:
    penalty: float = 0.15
    max_depth: int = 2
    floor: float = 0.05  # a penalty never takes base confidence below this


def ripple(depended_by: Ragged, origin: int, p: RippleParams, skip: np.ndarray | None = None,
           ) -> list[tuple[int, int, float]]:
    """(vector, depth, penalty) for every dependant reached from ``origin``; depth starts at 1.

    ``skip`` marks vectors that are neither penalised nor traversed (deprecated or archived dependants).
    Each vector is reached at most once per origin, at its smallest depth.
    """
    visited = {origin}
    frontier = [origin]
    hits: list[tuple[int, int, float]] = []
    for depth in range(1, p.max_depth + 1):
        nxt = []
        for v in frontier:
            for d in depended_by.row(v).tolist():
                if d in visited or (skip is not None and skip[d]):
                    continue
                visited.add(d)
                hits.append((d, depth, p.penalty / depth))
                nxt.append(d)
        frontier = nxt
        if not frontier:
            break
    return hits


def apply_penalties(base: np.ndarray, hits: list[tuple[int, int, float]], floor: float) -> np.ndarray:
    """Subtract each penalty in order, never below ``floor`` (the reference's max(0.05, c - p)); a value
    already below the floor is left as it is (a penalty never raises confidence)."""
    out = base.astype(np.float64).copy()
    for v, _, pen in hits:
        out[v] = min(out[v], max(floor, out[v] - pen))
    return out
