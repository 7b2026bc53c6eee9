"""RipplePropagator (SmartVector paper): bounded breadth-first search along ``depended_by`` from a changed or
contradicted vector, penalising dependants by penalty / (depth + 1) (0.15 at hop 1, 0.075 at hop 2),
max depth 2; a visited set makes it terminate on cycles. :func:`ripple` is the per-origin form (the
specification); :func:`ripple_hits` and :func:`apply_ripple` are the same walk vectorised over many origins,
as the ConsolidationAgent runs it, and are tested against it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from smartvector_bench.core.csr import Ragged
from smartvector_bench.systems.smartvector.signals.confidence import live_confidence
from smartvector_bench.systems.smartvector.store import VectorStore


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


@dataclass
class RippleHits:
    """Every (origin, vector, depth, penalty) the sequential loop ``for origin in origins: ripple(...)`` would
    produce, in its order, as columns."""

    origin: np.ndarray
    vector: np.ndarray
    depth: np.ndarray
    penalty: np.ndarray

    def __len__(self) -> int:
        return len(self.vector)


def ripple_hits(depended_by: Ragged, origins: np.ndarray, p: RippleParams, skip: np.ndarray | None = None,
                ) -> RippleHits:
    """:func:`ripple` for each of ``origins`` (in that order), breadth-first level by level over all origins
    at once: the same hits in the same order (per origin: by depth, then first reached)."""
    origins = np.asarray(origins, dtype=np.int64)
    n = depended_by.n_rows
    counts, indptr, indices = depended_by.counts(), depended_by.indptr, depended_by.indices
    owner = np.arange(len(origins), dtype=np.int64)  # rank of the origin a frontier entry belongs to
    frontier = origins.copy()
    visited = np.sort(owner * n + origins)
    parts = []
    for depth in range(1, p.max_depth + 1):
        if not len(frontier):
            break
        cnt = counts[frontier]
        own = np.repeat(owner, cnt)
        starts = np.repeat(indptr[frontier] - np.cumsum(cnt) + cnt, cnt)
        d = indices[starts + np.arange(len(own))]
        key = own * n + d
        at = np.minimum(np.searchsorted(visited, key), len(visited) - 1)
        ok = visited[at] != key  # not visited yet (visited is sorted)
        if skip is not None:
            ok &= ~skip[d]
        pos = np.nonzero(ok)[0]
        order = np.argsort(key[pos], kind="stable")
        ks = key[pos][order]
        first = order[np.r_[True, ks[1:] != ks[:-1]]] if len(ks) else order
        pos = pos[np.sort(first)]  # first time each (origin, vector) is reached, in scan order
        owner, frontier = own[pos], d[pos]
        visited = np.sort(np.concatenate([visited, owner * n + frontier]))
        parts.append((owner, frontier, np.full(len(pos), depth, dtype=np.int64)))
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return RippleHits(empty, empty, empty, np.zeros(0))
    own = np.concatenate([x[0] for x in parts])
    vec = np.concatenate([x[1] for x in parts])
    dep = np.concatenate([x[2] for x in parts])
    order = np.argsort(own, kind="stable")  # origin order, then depth, then scan order
    own, vec, dep = own[order], vec[order], dep[order]
    return RippleHits(origins[own], vec, dep, p.penalty / dep.astype(np.float64))


def round6(x: np.ndarray) -> list[float]:
    """``[round(v, 6) for v in x]`` (Python's correctly rounded round) for finite |x| <= 1e3, vectorised:
    ``rint(x * 1e6) / 1e6`` is the same float unless the product lies near a half (its rounding error is
    < 1e-9 there), where Python's round is called."""
    x = np.asarray(x, dtype=np.float64)
    scaled = x * 1e6
    frac = np.abs(scaled - np.floor(scaled) - 0.5)
    slow = ~((frac > 1e-6) & (np.abs(x) <= 1e3))
    out = (np.rint(scaled) / 1e6).tolist()
    for i in np.nonzero(slow)[0].tolist():
        out[i] = round(float(x[i]), 6)
    return out


def apply_ripple(store: VectorStore, hits: RippleHits, t: float, floor: float) -> None:
    """``store.penalize(v, pen, origin, depth, t, floor)`` for every hit in order, computed column-wise: each
    vector's penalties are applied in sequence (round r applies every vector's r-th hit), with the same
    float64 operations, so state, ledger and events equal the per-hit loop's."""
    m = len(hits)
    if not m:
        return
    vec = hits.vector
    order = np.argsort(vec, kind="stable")
    group_start = np.zeros(m, dtype=np.int64)
    new_group = np.r_[True, vec[order][1:] != vec[order][:-1]]
    group_start[new_group] = np.nonzero(new_group)[0]
    np.maximum.accumulate(group_start, out=group_start)
    rank = np.empty(m, dtype=np.int64)
    rank[order] = np.arange(m) - group_start
    by_round = np.lexsort((vec, rank))
    bounds = np.searchsorted(rank[by_round], np.arange(rank.max() + 2))
    before, after, applied = np.empty(m), np.empty(m), np.empty(m)
    authority = store.corpus.authority
    decay_from = store.decay_from()
    at = np.array([t], dtype=np.float64)

    def conf(v: np.ndarray) -> np.ndarray:
        return live_confidence(authority[v] - store.penalty[v], decay_from[v], at, store.positive[v],
                               store.negative[v], store.access[v], store.conf)[0]

    for r in range(len(bounds) - 1):
        idx = by_round[bounds[r]:bounds[r + 1]]
        v = vec[idx]  # distinct within a round
        base = authority[v] - store.penalty[v]
        before[idx] = conf(v)
        app = np.where(base > floor, base - np.maximum(floor, base - hits.penalty[idx]), 0.0)
        applied[idx] = app
        store.penalty[v] += app
        after[idx] = conf(v)
    t = float(t)
    store.events.add_columns(m, time=t, kind="ripple", vector=vec, cause=hits.origin,
                             confidence_before=np.array(round6(before)), confidence_after=np.array(round6(after)),
                             depth=hits.depth, penalty=hits.penalty, applied=np.array(round6(applied)))
    store.penalties.add_columns(m, vector=vec, origin=hits.origin, depth=hits.depth, applied=applied, time=t,
                                lifted_at=None)
