"""Upper bounds of SmartVector's rank key over an as_of span, for the re-ranking path's prior candidates.

Each bound evaluates the spec's monotone formulas (``signals/``) at the span's start: T and C only decay as
t grows, and dormancy, deprecation and archiving only start. ``confidence_bound`` is
``signals.confidence.live_confidence`` on pre-scaled columns (``tests/test_formulas_served.py`` checks it bit
for bit).
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from smartvector_bench.systems.smartvector.scoring import Columns
from smartvector_bench.systems.smartvector.signals.confidence import ConfidenceParams, decayed_confidence
from smartvector_bench.systems.smartvector.params import SearchState


BOUND_EPS = 1e-9  # slack on the certification bound (floating-point rounding of the bound's terms)
BLOCK = 1024  # vectors per block of the prior-candidate search (block bounds prune the bound computation)


def confidence_bound(base, decay_from, fb_pos, fb_neg, access, t_lo: float, cp: ConfidenceParams):
    """``signals.confidence.live_confidence`` at t_lo on pre-scaled feedback and access columns (monotone in
    base, decay start, fb_pos and access, antitone in fb_neg, so block extremes give a block bound)."""
    conf = decayed_confidence(base, t_lo - decay_from, cp)
    return np.minimum(1.0, np.clip(conf + fb_pos - fb_neg, cp.min_confidence, 1.0) + access)



@dataclass
class Blocks:
    """The vectors in blocks of ``BLOCK`` consecutive rows of the decay-start order (recent ones together), with
    each block's extremes of the columns ``key_bound`` reads (built once per search, O(N))."""

    perm: np.ndarray
    starts: np.ndarray
    sizes: np.ndarray
    created_max: np.ndarray
    decay_from_max: np.ndarray
    base_max: np.ndarray
    fb_pos_max: np.ndarray
    fb_neg_min: np.ndarray
    access_max: np.ndarray
    rel_max: np.ndarray
    arrives_min: np.ndarray  # min over the block of max(created, ingested_at)
    cols: Columns  # the columns in block order (a block's rows are contiguous: cache-friendly gathers)

    @classmethod
    def build(cls, cols: Columns) -> "Blocks":
        n = len(cols.created)
        perm = np.argsort(cols.decay_from, kind="stable")
        starts = np.arange(0, n, BLOCK)
        sizes = np.diff(np.append(starts, n))
        by_block = Columns(**{f: getattr(cols, f)[perm] for f in Columns.__dataclass_fields__})

        def red(ufunc, a):
            return ufunc.reduceat(a, starts) if n else np.zeros(0)

        c = by_block
        return cls(perm, starts, sizes, red(np.maximum, c.created), red(np.maximum, c.decay_from),
                   red(np.maximum, c.base), red(np.maximum, c.fb_pos), red(np.minimum, c.fb_neg),
                   red(np.maximum, c.access), red(np.maximum, c.rel),
                   red(np.minimum, np.maximum(c.created, c.ingested_at)), by_block)

    def positions_of(self, blocks: np.ndarray) -> np.ndarray:
        """Positions (in block order) of the given blocks' vectors, block by block."""
        lens = self.sizes[blocks]
        return np.repeat(self.starts[blocks] - np.cumsum(lens) + lens, lens) + np.arange(int(lens.sum()))



def key_bound(sv: SearchState, cols: Columns, t_lo: float, t_hi: float, idx: np.ndarray | None = None) -> np.ndarray:
    """(N,) upper bound of each vector's rank key minus its semantic part (w_s clip(cos) / W), over
    every as_of in [t_lo, t_hi]: T and C only decay as t grows (T is expired_score outside the window),
    dormancy, deprecation and archiving only start, and a vector is excluded for the whole span only if
    it is excluded at its start (or, for not-yet-created, at its end). -inf: excluded all along.
    ``idx``: only these vectors (in that order)."""
    g = (lambda a: a) if idx is None else (lambda a: a[idx])
    w, tp, cp = sv.weights, sv.temporal, sv.conf_params
    in_window = (g(cols.valid_from) <= t_hi) & (g(cols.valid_to) > t_lo)
    temporal = np.exp2(-np.maximum(t_lo - g(cols.created), 0.0) / tp.half_life_days)
    temporal = np.where(in_window, np.maximum(temporal, tp.expired_score), tp.expired_score)
    conf = confidence_bound(g(cols.base), g(cols.decay_from), g(cols.fb_pos), g(cols.fb_neg), g(cols.access), t_lo,
                       cp)
    bound = (w.temporal * temporal + w.confidence * conf + g(cols.rel)) / w.total() + BOUND_EPS
    dormant = conf < cp.dormant_threshold  # dormant at t_lo: dormant for every later t
    if sv.policy.dormant == "deprioritize":
        bound[dormant] -= 2.0
    excluded = dormant if sv._excludes_dormant() else np.zeros(len(bound), dtype=bool)
    if "DEPRECATED" in sv.exclude:
        excluded |= t_lo >= g(cols.succ_from)
    if "ARCHIVED" in sv.exclude:
        excluded |= t_lo >= g(cols.archived_at)
    if sv.policy.exclude_created_after_as_of:
        excluded |= (t_hi < g(cols.created)) | (t_hi < g(cols.ingested_at))
    bound[excluded] = -np.inf
    return bound


def block_bound(sv: SearchState, blocks: "Blocks", t_lo: float, t_hi: float) -> np.ndarray:
    """Per block of ``blocks``, an upper bound of ``key_bound`` over its vectors: the same monotone formula
    on the block's extremes (latest creation and decay start, highest base, feedback, accesses and R);
    status rules only lower a bound, so they are left out, except a block created entirely after t_hi."""
    w, tp, cp = sv.weights, sv.temporal, sv.conf_params
    temporal = np.maximum(np.exp2(-np.maximum(t_lo - blocks.created_max, 0.0) / tp.half_life_days),
                          tp.expired_score)
    conf = confidence_bound(blocks.base_max, blocks.decay_from_max, blocks.fb_pos_max, blocks.fb_neg_min,
                       blocks.access_max, t_lo, cp)
    bound = (w.temporal * temporal + w.confidence * conf + blocks.rel_max) / w.total() + BOUND_EPS
    if sv.policy.exclude_created_after_as_of:
        bound[blocks.arrives_min > t_hi] = -np.inf
    return bound


def top_bounds(sv: SearchState, blocks: "Blocks", t_lo: float, t_hi: float, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, bounds): the m + 1 vectors with the highest ``key_bound`` over [t_lo, t_hi], by descending
    bound (ties: lower row first), computing the bound only on the blocks that can hold them: blocks are
    taken by descending block bound until the next one's is no higher than the (m + 1)-th bound found.
    Every vector left out has a bound no higher than the last one returned."""
    n = len(blocks.perm)
    m = min(m, n - 1)
    ub = block_bound(sv, blocks, t_lo, t_hi)
    border = np.argsort(-ub, kind="stable")
    cum = np.cumsum(blocks.sizes[border])
    j = int(np.searchsorted(cum, m + 1)) + 1  # enough blocks for m + 1 vectors
    done, pos, b = 0, np.zeros(0, dtype=np.int64), np.zeros(0)
    while True:
        new = blocks.positions_of(border[done:j])  # bounds are computed once per block
        pos = np.concatenate([pos, new])
        b = np.concatenate([b, key_bound(sv, blocks.cols, t_lo, t_hi, new)])
        done = j
        tau = -np.partition(-b, m)[m] if len(b) > m else -np.inf
        nxt = ub[border[j]] if j < len(border) else -np.inf
        if not nxt > tau:
            break
        j = max(j + 1, min(2 * j, int(np.count_nonzero(ub > tau))))  # tau rises as blocks are added
    idx = blocks.perm[pos]
    top = np.argpartition(-b, m)[: m + 1] if len(b) > m + 1 else np.arange(len(b))
    top = top[np.lexsort((idx[top], -b[top]))]
    return idx[top], b[top]

