"""SmartVector's numpy fast path: the four-signal score and status key on columnar arrays, in place.

``fused`` implements :meth:`SmartVector.score` (the specification: ``signals/`` composed at each query's
as_of) with the same floating-point operations in the same order, so it is bit-identical to it in float64;
``tests/test_formulas_served.py`` holds it to that. ``top_k_by_key`` and ``dedupe_rows`` are the selection
helpers of the exhaustive and re-ranking paths.
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from smartvector_bench.core.run import rank_by_score
from smartvector_bench.systems.smartvector.params import SearchState



@dataclass
class Columns:
    """Per-vector columns the signals read, float64, decoded once per search call from the store's compact
    columns (transient: nothing here stays resident between searches)."""

    created: np.ndarray
    valid_from: np.ndarray
    valid_to: np.ndarray
    decay_from: np.ndarray
    base: np.ndarray
    fb_pos: np.ndarray  # positive_boost * positive
    fb_neg: np.ndarray  # negative_penalty * negative
    access: np.ndarray  # access_reinforcement * ln(1 + accesses)
    rel: np.ndarray  # w_r * R
    succ_from: np.ndarray  # valid_from of the successor (inf: none)
    archived_at: np.ndarray
    ingested_at: np.ndarray


def columns(sv: SearchState) -> Columns:
    """The columns ``fused``, the bounds and the numba kernel read, decoded from the store's exact compact
    columns (the corpus's values, bit for bit); feedback, accesses and R pre-scaled by their weights exactly as
    ``signals.confidence.live_confidence`` and ``signals.fusion.fuse`` scale them."""
    st, p = sv.store, sv.conf_params
    sup = st.superseded_by
    has = sup >= 0
    valid_from = st.valid_from.values()
    return Columns(
        created=st.created_at.values(), valid_from=valid_from, valid_to=st.valid_to.values(),
        decay_from=st.decay_from(), base=st.base_confidence, fb_pos=st.positive.map(lambda x: p.positive_boost * x),
        fb_neg=st.negative.map(lambda x: p.negative_penalty * x),
        access=st.access.map(lambda x: p.access_reinforcement * np.log1p(np.maximum(x, 0))),
        rel=sv.weights.relational * sv.relational(),
        succ_from=np.where(has, valid_from[np.where(has, sup, 0)], np.inf),
        archived_at=st.archived_at.values(), ingested_at=st.ingested_at.values())


def _decayed(t: np.ndarray, start: np.ndarray, half_life: float, dtype) -> np.ndarray:
    """2^(-max(t - start, 0) / H), a new (Q, M) array (the decay term of ``temporal_signal`` and
    ``decayed_confidence``, same operations, computed in place)."""
    x = t - start
    np.maximum(x, 0.0, out=x)
    np.negative(x, out=x)
    x /= half_life
    x = x.astype(dtype, copy=False)
    np.exp2(x, out=x)
    return x


def fused(sv: SearchState, cols: Columns, semantic: np.ndarray, as_of: np.ndarray, ids: np.ndarray | None = None,
           dtype=np.float64, need_confidence: bool = False):
    """Fast path of :meth:`SmartVector.score` (``signals/`` temporal, confidence, fusion and the status key):
    (score, key, confidence or None) for (Q, M) entries: column j of row q is vector ``ids[q, j]``
    (``ids=None``: every vector, in row order). ``semantic`` is consumed (it becomes the score).

    The same floating-point operations as ``score()`` in the same order (in place), so the values are
    bit-identical in float64."""
    g = (lambda a: a[None, :]) if ids is None else (lambda a: a[ids])
    t = np.asarray(as_of, dtype=np.float64)[:, None]
    w, tp, cp = sv.weights, sv.temporal, sv.conf_params
    # temporal: expired_score outside [valid_from, valid_to), else 2^(-max(t - created, 0) / H)
    temporal = _decayed(t, g(cols.created), tp.half_life_days, dtype)
    outside = t >= g(cols.valid_to)
    outside |= t < g(cols.valid_from)
    temporal[outside] = tp.expired_score
    # confidence: max(c_min, base * 2^(-max(t - decay_from, 0) / H)) + feedback, clipped; + accesses, <= 1
    conf = _decayed(t, g(cols.decay_from), cp.half_life_days, dtype)
    conf *= g(cols.base)
    np.maximum(conf, cp.min_confidence, out=conf)
    conf += g(cols.fb_pos)
    conf -= g(cols.fb_neg)
    np.clip(conf, cp.min_confidence, 1.0, out=conf)
    conf += g(cols.access)
    np.minimum(conf, 1.0, out=conf)
    dormant = conf < cp.dormant_threshold
    # fuse: ((w_s clip(s) + w_t T) + w_c C) + w_r R, then / W
    score = semantic if semantic.dtype == dtype else semantic.astype(dtype)
    np.clip(score, 0.0, 1.0, out=score)
    score *= w.semantic
    temporal *= w.temporal
    score += temporal
    np.multiply(conf, w.confidence, out=temporal)
    score += temporal
    score += g(cols.rel)
    score /= w.total()
    del temporal
    key = score.copy()
    if sv.policy.dormant == "deprioritize":
        key[dormant] -= 2.0
    excluded = dormant if sv._excludes_dormant() else np.zeros(key.shape, dtype=bool)
    if "DEPRECATED" in sv.exclude:
        excluded |= t >= g(cols.succ_from)
    if "ARCHIVED" in sv.exclude:
        excluded |= t >= g(cols.archived_at)
    if sv.policy.exclude_created_after_as_of:
        excluded |= t < g(cols.created)
        excluded |= t < g(cols.ingested_at)
    key[excluded] = -np.inf
    return score, key, (conf if need_confidence else None)


def top_k_by_key(key: np.ndarray, k: int) -> np.ndarray:
    """``rank_by_score(key, k)[0]`` (descending key, ties to the lower index, -inf dropped), selecting the
    candidates with a partition first: only the entries >= each row's k-th largest key are sorted."""
    q, n = key.shape
    if n <= 4 * k + 64 or q == 0:
        return rank_by_score(key, k)[0]
    # the k-th largest via the k-th smallest of -key (numpy's introselect is slow on long runs of equal
    # values, e.g. excluded -inf, when they lie below the k-th position)
    kth = -np.partition(-key, k - 1, axis=1)[:, k - 1]
    floor = np.where(np.isfinite(kth), kth, np.inf)[:, None]  # -inf k-th: only the finite entries count
    mask = (key >= floor) | (np.isfinite(key) & ~np.isfinite(kth)[:, None])
    counts = mask.sum(axis=1)
    width = int(counts.max()) if q else 0
    if width > 64 * k + 1024:  # massive ties at the k-th key: the plain sort is as good
        return rank_by_score(key, k)[0]
    rows, cols = np.nonzero(mask)  # row-major: per row, ascending corpus index
    start = np.zeros(q + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    slot = np.arange(len(rows)) - start[rows]
    sub = np.full((q, max(width, 1)), -np.inf)
    cand = np.full((q, max(width, 1)), n, dtype=np.int64)
    sub[rows, slot] = key[rows, cols]
    cand[rows, slot] = cols
    return rank_by_score(sub, k, candidates=cand)[0]


def dedupe_rows(ids: np.ndarray) -> np.ndarray:
    """(Q, M) bool: True for the first occurrence of each id in its row, False for repeats and for -1."""
    if ids.size == 0:
        return np.zeros(ids.shape, dtype=bool)
    order = np.argsort(ids, axis=1, kind="stable")
    srt = np.take_along_axis(ids, order, axis=1)
    first = np.ones(ids.shape, dtype=bool)
    first[:, 1:] = srt[:, 1:] != srt[:, :-1]
    keep = np.empty(ids.shape, dtype=bool)
    np.put_along_axis(keep, order, first, axis=1)
    return keep & (ids >= 0)

