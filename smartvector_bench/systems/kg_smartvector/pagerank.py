"""Graph importance over the dependency graph: PageRank (ours) or the crate's normalised in-degree.

Edges, for ``pagerank``: an edge u -> v means "u relies on v" and passes importance to v.
- ``A depends_on B``  -> A -> B (B is relied upon)
- ``A depended_by B`` -> B -> A (the same relation written from the other end)
- ``A supersedes B``  -> excluded: replacing B is not relying on B, so it must never raise B's importance
  (nor A's: a successor earns importance from the entities that come to depend on it)
- ``A contradicts B`` -> ignored

``in_degree`` reproduces sqlite-knowledge-graph v0.13 (REFERENCE.md section 3): the number of
``kg_dependencies`` rows whose ``target_id`` is the entity, over *all four* types, divided by the maximum.
Faithfully to the crate, "A supersedes B" and "A contradicts B" therefore raise B, and "A depended_by B"
raises B (the dependant), not A.

Both are normalised to [0, 1] by dividing by the maximum (all zeros for ``in_degree`` with no edges).
"""

from __future__ import annotations

import numpy as np

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.kg_smartvector.schema import DEPENDENCY_TYPES

MODES = ("pagerank", "in_degree")


def pagerank(n: int, src: np.ndarray, dst: np.ndarray, damping: float = 0.85, tol: float = 1e-10,
             max_iter: int = 10_000, weights: np.ndarray | None = None) -> np.ndarray:
    """PageRank of ``n`` nodes over the edges ``src[i] -> dst[i]`` (importance flows to ``dst``).

    p <- (1 - d) / n + d * (A p + (dangling mass) / n), by power iteration from the uniform vector until the
    L1 change is below ``tol``; a node with no out-edges (dangling) spreads its mass uniformly over all
    nodes. Repeated edges add up (``weights`` default 1 each); self-loops are kept. Returns probabilities
    summing to 1 (not normalised to the max: see :func:`normalise_max`).
    """
    if not 0.0 <= damping < 1.0:
        raise BenchError(f"damping={damping}: must be in [0, 1)")
    if n == 0:
        return np.zeros(0)
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    w = np.ones(len(src)) if weights is None else np.asarray(weights, dtype=np.float64)
    if len(src) and (src.min() < 0 or dst.min() < 0 or src.max() >= n or dst.max() >= n):
        raise BenchError(f"pagerank: edge endpoint outside 0..{n - 1}")
    out_weight = np.bincount(src, weights=w, minlength=n)
    dangling = out_weight == 0
    share = np.divide(w, out_weight[src], out=np.zeros_like(w), where=out_weight[src] > 0)
    p = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        flow = np.bincount(dst, weights=share * p[src], minlength=n)
        new = (1.0 - damping) / n + damping * (flow + p[dangling].sum() / n)
        new /= new.sum()  # guards against drift; the update already preserves the total
        if np.abs(new - p).sum() < tol:
            return new
        p = new
    raise BenchError(f"pagerank: no convergence to {tol} in {max_iter} iterations")


def normalise_max(scores: np.ndarray) -> np.ndarray:
    top = scores.max() if len(scores) else 0.0
    return scores / top if top > 0 else np.zeros_like(scores, dtype=np.float64)


def importance_edges(src: np.ndarray, dst: np.ndarray, dep_type: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The PageRank edge list (relier -> relied upon) from dependency rows, by the rules in the module doc."""
    dep_type = np.asarray(dep_type, dtype=object)
    unknown = set(dep_type.tolist()) - set(DEPENDENCY_TYPES)
    if unknown:
        raise BenchError(f"dep_type {min(unknown)!r}: unknown; allowed: {', '.join(DEPENDENCY_TYPES)}")
    on = dep_type == "depends_on"
    by = dep_type == "depended_by"
    return (np.concatenate([src[on], dst[by]]).astype(np.int64),
            np.concatenate([dst[on], src[by]]).astype(np.int64))


def graph_importance(n: int, src: np.ndarray, dst: np.ndarray, dep_type: np.ndarray, mode: str = "pagerank",
                     damping: float = 0.85, tol: float = 1e-10) -> np.ndarray:
    """Importance in [0, 1] of ``n`` nodes from dependency rows (``src``, ``dst`` node numbers 0..n-1)."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if mode == "pagerank":
        s, d = importance_edges(src, dst, dep_type)
        return normalise_max(pagerank(n, s, d, damping=damping, tol=tol))
    if mode == "in_degree":  # the crate: every row counts for its target, whatever its type
        return normalise_max(np.bincount(dst, minlength=n).astype(np.float64))
    raise BenchError(f"graph_importance={mode}: unknown; allowed: {', '.join(MODES)}")
