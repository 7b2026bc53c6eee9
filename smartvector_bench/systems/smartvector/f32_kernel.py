"""Exhaustive four-signal top-k by a blocked, branch-free float32 pass, made exact by float64 re-scoring.

Per tile of queries x stored vectors: one float32 BLAS product gives the cosines; one compiled pass per query
row turns them into a float32 rank key with no branch per entry (clamps, the validity window, exclusions and
dormancy are selects), and a threshold selection keeps the ``L = k + m`` best float32 keys per
query in a small heap (a chunk of a row is only scanned for pushes when one of its keys beats the heap's
root, a test folded into the scoring loop as an OR). The kept candidates are then re-scored in float64 by
``scoring.fused`` (bit-identical to ``SmartVector.score``, the specification) from the same float32 cosines,
and ranked by the harness's tie rule (equal keys: lower corpus index first). The tiles of a batch lie on a grid fixed
by the batch's shape (``tiles``), cut into one run per thread, each running its own single-threaded products and
scans (``scan``): the cosines are read back from the core's cache, not from memory, no core changes thread pool
per tile, and no cosine depends on the thread count.

Separable time factors: 2^(-max(t - c, 0) / H) = min(1, 2^((t0 - t) / H) * 2^((c - t0) / H)), one factor per
query and one per vector, from a per-group origin t0 (the group's latest as_of) so neither overflows float32:
the per-vector exponent is clipped to [-CLIP, 1] (raising a factor only raises the key, and a vector created
after t0 has a factor >= 2 against a per-query one >= 1, so its min is the exact 1), and queries are grouped
so that (t0 - t) / H <= SPAN (the clipped tail then weighs < 2^(SPAN - CLIP)). Every comparison of times is
the float64 comparison ``fused`` makes (the window edges valid_from <= t < valid_to, deprecation, archiving,
not yet created), so exclusions and the validity window are decided exactly.

Exactness certificate: ``rounding_bound`` is a bound E on how far a float64 key can lie above the float32
key of the same entry (derived from the float32 unit roundoff, operation by operation, from the magnitudes
of the columns). Dormancy is only applied in float32 where C32 is below the threshold by more than C's own
bound, so the float32 key is E-close or above the true one for every entry. Every vector outside the kept
set has a float32 key <= the heap's root, so its float64 key is <= root + E; a query is certified when its
k-th float64 key exceeds root + E (or the root is -inf: everything else is excluded). A query that fails
(near-ties at the k-th key, exact duplicates) is rescanned with a 4x larger heap, and past ``MAX_KEPT`` it is
left to the caller's float64 path. Certified answers are the specification's top k, ids and order.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import get_num_threads, njit, prange

from smartvector_bench.systems.smartvector.jit import blas_threads, one_thread, thread_safe, variant
from smartvector_bench.systems.smartvector.scoring import Columns, fused

U32 = 2.0 ** -24  # float32 unit roundoff
CLIP = 100.0  # per-vector time exponents are clipped to [-CLIP, 1]
SPAN = 70.0  # a query group spans at most SPAN half-lives of as_of: 2^(SPAN - CLIP) is below 1e-9
MARGIN = 1.25  # the bound's first-order terms times this covers the second-order ones and float64's rounding
CHUNK = 256  # keys per selection test (a chunk is scanned only if one of its keys beats the heap's root)
EXTRA = 16  # default m: L = k + m float32 candidates kept per query
MAX_KEPT = 4096  # widening stops here; the caller scores the rest with its float64 path
TILE_ROWS, TILE_WIDTH = 512, 1024  # a worker's tile of cosines (2 MB): it stays in the core's L2 cache
MAX_WIDTH = 16 * TILE_WIDTH  # the widest tile (few query rows): a batch of a few queries still spreads over threads


def rounding_bound(weights, expired: float, cmin: float, base_max: float, fb_max: float, access_max: float,
                   rel_max: float, deprioritize: bool) -> tuple[float, float]:
    """(E_key, E_conf): bounds of |key_R - key32| and |C_R - C32| for the float32 pass's operations (u = 2^-24
    per rounding; |x| bounds from the columns' extremes; a clip, min or max is 1-Lipschitz):

    T: a_t, e_t and their product rounded (3u of T <= 1), or expired_score rounded (u |expired|);
    C: base * min(1, a_c e_c) (4u |base|), max with c_min (u c_min), + fb (u |fb| for its rounding, u |sum|),
       clip (u c_min), + access (u |access|, u |sum|);
    key: weights / W rounded and each product rounded (2u per term), plus the propagated T and C errors, R / W
       rounded, three additions (u |partial sum| each), and the dormant - 2 (u (|key| + 2)).
    The float64 key's own error (~1e-15) and second-order terms are covered by ``MARGIN`` and 1e-12."""
    ws, wt, wc = weights.semantic / weights.total(), weights.temporal / weights.total(), \
        weights.confidence / weights.total()
    rel_w = abs(rel_max) / weights.total()
    t_max = max(1.0, abs(expired))
    e_t = U32 * max(3.0, abs(expired))
    sum1 = max(1.0, abs(base_max), abs(cmin)) + abs(fb_max)  # |max(decayed, c_min) + fb|
    c_max = max(1.0, abs(cmin))
    e_c = U32 * (4.0 * abs(base_max) + 2.0 * abs(cmin) + abs(fb_max) + sum1 + abs(access_max) + c_max +
                 abs(access_max))
    s_abs = ws + wt * t_max + wc * c_max + rel_w
    e_key = U32 * (2.0 * (ws + wt * t_max + wc * c_max) + rel_w + 3.0 * s_abs) + wt * e_t + wc * e_c
    if deprioritize:
        e_key += U32 * (s_abs + 2.0)
    return MARGIN * e_key + 1e-12, MARGIN * e_c + 1e-12


def _f32_below(x: float) -> np.float32:
    """The largest float32 strictly below x (a threshold that only ever errs towards 'not dormant')."""
    y = np.float32(x)
    return np.nextafter(y, np.float32(-np.inf)) if float(y) >= x else y


@njit(parallel=True, cache=True)
def _vector_columns(created, decay_from, base, fb_pos, fb_neg, access, rel, t0, h_t, h_c, w_total):
    """The float32 columns of ``Prepared`` in one pass: 2^clip((created - t0) / H_T), 2^clip((decay_from - t0)
    / H_C), base, fb_pos - fb_neg, access, R / W."""
    n = created.size
    f = np.empty((6, n), dtype=np.float32)
    for i in prange(n):
        f[0, i] = np.float32(np.exp2(min(max((created[i] - t0) / h_t, -CLIP), 1.0)))
        f[1, i] = np.float32(np.exp2(min(max((decay_from[i] - t0) / h_c, -CLIP), 1.0)))
        f[2, i] = np.float32(base[i])
        f[3, i] = np.float32(fb_pos[i] - fb_neg[i])
        f[4, i] = np.float32(access[i])
        f[5, i] = np.float32(rel[i] / w_total)
    return f


# below this many vectors the one-pass column build runs without a parallel region (its thread wake-up costs
# more than the pass)
PARALLEL_FROM = 1 << 18
_vector_columns_serial = variant(_vector_columns, "_vector_columns_serial", cache=True)


@njit(cache=True, inline="always")
def _sift(hk, hi, hc, key, j, cos):
    """Replace the root of the min-heap (hk, hi, hc) by (key, j, cos) and sift it down."""
    n = hk.size
    p = 0
    while True:
        c = 2 * p + 1
        if c >= n:
            break
        if c + 1 < n and hk[c + 1] < hk[c]:
            c += 1
        if hk[c] < key:
            hk[p] = hk[c]
            hi[p] = hi[c]
            hc[p] = hc[c]
            p = c
        else:
            break
    hk[p] = key
    hi[p] = j
    hc[p] = cos


_ONE, _ZERO, _TWO, _NINF = np.float32(1.0), np.float32(0.0), np.float32(2.0), np.float32(-np.inf)


@njit(cache=True, inline="always", fastmath={"contract", "nsz", "arcp"})
def key32(cos, j, t, at, ac, e_t, e_c, base, fb, acc, rel, win_lo, win_hi, live_lo, live_hi, ws, wt, wc, expired,
          cmin, dorm, deprio, excl_dorm):
    """The float32 rank key of vector j at as_of t (float64; factors at, ac), every rule a select."""
    s = min(max(cos, _ZERO), _ONE)
    inside = ~(t >= win_hi[j]) & ~(t < win_lo[j])  # negated: a NaN bound never compares true
    temporal = min(_ONE, at * e_t[j]) if inside else expired
    c = base[j] * min(_ONE, ac * e_c[j])
    c = max(c, cmin) + fb[j]
    c = min(max(c, cmin), _ONE) + acc[j]
    c = min(c, _ONE)
    key = ws * s + wt * temporal + wc * c + rel[j]
    dormant = c < dorm
    key = key - _TWO if (deprio & dormant) else key
    alive = ~(t < live_lo[j]) & ~(t >= live_hi[j]) & ~(excl_dorm & dormant)
    return key if alive else _NINF


@njit(parallel=True, cache=True, nogil=True, fastmath={"contract", "nsz", "arcp"})
def scan_block(cos, j0, as_of, a_t, a_c, e_t, e_c, base, fb, acc, rel, win_lo, win_hi, live_lo, live_hi, wts,
               consts, flags, hk, hi, hc):
    """Fold the float32 cosine block ``cos`` (Q, B) of vectors j0 .. j0 + B (the column arguments are those
    vectors' slices) into the per-query heaps (hk float32 key, hi index, hc cosine; each (Q, L), min-heap by
    key). ``wts``: w_s/W, w_t/W, w_c/W (float32); ``consts``: expired_score, c_min, the dormant threshold
    lowered by C's bound (float32); ``flags``: deprioritize dormant, exclude dormant.

    Per query row, chunks of ``CHUNK`` keys are computed into a buffer by a loop with no branch (it
    vectorises: the index is unsigned, so numba adds no negative-index select), folding "some key beats
    the heap's root" into an OR; only such chunks are scanned for pushes."""
    ws, wt, wc = wts[0], wts[1], wts[2]
    expired, cmin, dorm = consts[0], consts[1], consts[2]
    deprio, excl_dorm = flags[0], flags[1]
    nq, nb = cos.shape
    for q in prange(nq):
        buf = np.empty(CHUNK, dtype=np.float32)
        t, at, ac = as_of[q], a_t[q], a_c[q]
        cq, hkq, hiq, hcq = cos[q], hk[q], hi[q], hc[q]
        for c0 in range(0, nb, CHUNK):
            m = min(CHUNK, nb - c0)
            thr = hkq[0]
            hit = False
            u0 = np.uint64(c0)
            for i in range(m):
                j = u0 + np.uint64(i)
                key = key32(cq[j], j, t, at, ac, e_t, e_c, base, fb, acc, rel, win_lo, win_hi, live_lo, live_hi,
                            ws, wt, wc, expired, cmin, dorm, deprio, excl_dorm)
                buf[i] = key
                hit |= key > thr
            if hit:
                for i in range(m):
                    if buf[i] > hkq[0]:
                        _sift(hkq, hiq, hcq, buf[i], j0 + c0 + i, cq[c0 + i])

def query_groups(as_of: np.ndarray, half_life: float) -> list[np.ndarray]:
    """Query rows split by as_of into groups spanning at most SPAN half-lives (usually one group)."""
    order = np.argsort(as_of, kind="stable")
    t = as_of[order]
    groups, lo = [], 0
    while lo < len(t):
        hi = int(np.searchsorted(t, t[lo] + SPAN * half_life, side="right"))
        groups.append(order[lo:hi])
        lo = hi
    return groups


class Prepared:
    """One query group's float32 columns, float64 time bounds and per-query factors (O(N) once per group)."""

    def __init__(self, cols: Columns, as_of: np.ndarray, fp: dict, flags: dict):
        t0 = float(as_of.max())
        h_t, h_c = fp["t_half"], fp["c_half"]
        c = {f: np.ascontiguousarray(getattr(cols, f), dtype=np.float64) for f in Columns.__dataclass_fields__}
        build = _vector_columns if len(cols.created) >= PARALLEL_FROM else _vector_columns_serial
        self.f = build(c["created"], c["decay_from"], c["base"], c["fb_pos"], c["fb_neg"], c["access"], c["rel"],
                       t0, h_t, h_c, fp["w_total"])
        # float64 bounds of the validity window and of the vector's life: t < lo or t >= hi excludes it, the
        # comparisons fused makes (fmax / fmin: a NaN bound, never compared true, drops out; NaN: no bound)
        n = len(cols.created)
        none = np.full(n, np.nan)
        self.t = {"valid_from": c["valid_from"], "valid_to": c["valid_to"],
                  "live_lo": np.fmax(c["created"], c["ingested_at"]) if flags["exclude_created_after"] else none,
                  "live_hi": none}
        if flags["exclude_deprecated"]:
            self.t["live_hi"] = c["succ_from"]
        if flags["exclude_archived"]:
            self.t["live_hi"] = np.fmin(self.t["live_hi"], c["archived_at"])
        self.a_t = np.exp2((t0 - as_of) / h_t).astype(np.float32)
        self.a_c = np.exp2((t0 - as_of) / h_c).astype(np.float32)
        self.as_of = as_of

    def vector_args(self):
        return (*self.f, *self.t.values())


# the same pass without a parallel region: few rows' tiles where numba's layer (workqueue) cannot run workers
scan_block_serial = variant(scan_block, "scan_block_serial", cache=True, fastmath={"contract", "nsz", "arcp"})
SERIAL_BELOW = 8  # query rows per tile below which the calling thread's scan is the serial pass


def tile_shape(nq: int, n: int) -> tuple[int, int]:
    """(rows, width) of the tiles for ``nq`` rows and ``n`` vectors: wider for fewer rows, to ``MAX_WIDTH``."""
    rows = max(1, min(nq, TILE_ROWS))
    width = TILE_WIDTH * min(MAX_WIDTH // TILE_WIDTH, max(1, TILE_ROWS // rows))
    return rows, max(1, min(n, width))


def tiles(nq: int, n: int) -> list[tuple[slice, slice]]:
    """The (query rows, vectors) tiles, vectors outer, fixed by ``nq`` and ``n`` alone (some hosts' sgemm gives a
    row other bits in a product of another shape: every cosine's product has one shape whatever the threads)."""
    rows, width = tile_shape(nq, n)
    return [(slice(r0, min(nq, r0 + rows)), slice(j0, min(n, j0 + width)))
            for j0 in range(0, n, width) for r0 in range(0, nq, rows)]


def shares(grid: list, workers: int) -> list[list]:
    """The grid cut into at most ``workers`` contiguous runs of tiles of about equal cosine counts."""
    done = np.cumsum([(r.stop - r.start) * (v.stop - v.start) for r, v in grid])
    cuts = np.searchsorted(done, done[-1] * np.arange(1, workers) / workers, side="right") if grid else []
    cuts = [0, *(int(c) for c in cuts), len(grid)]
    return [grid[a:b] for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def products(stored: np.ndarray, qf: np.ndarray, share: list, scan=None, args=()) -> None:
    """One worker's tiles: a single-threaded BLAS product of each into a buffer that stays in the core's cache,
    then (if ``scan``) ``scan(cos, j0, *per-row and per-vector slices of args)`` before the next product
    overwrites it. ``args``: (as_of, a_t, a_c, vector columns, wts, consts, flags, hk, hi, hc)."""
    buf = np.empty(max(((r.stop - r.start) * (v.stop - v.start) for r, v in share), default=0), dtype=np.float32)
    t, a_t, a_c, vec, wts, consts, flags, hk, hi, hc = args or (None,) * 10
    for r, v in share:
        shape = (r.stop - r.start, v.stop - v.start)  # a contiguous view even for a ragged tile (BLAS's out)
        cos = np.matmul(qf[r], stored[v].T, out=buf[:shape[0] * shape[1]].reshape(shape))
        if scan is not None:
            scan(cos, v.start, t[r], a_t[r], a_c[r], *(c[v] for c in vec), wts, consts, flags, hk[r], hi[r], hc[r])


def merge(heaps: list[tuple], kept: int):
    """The ``kept`` best (key, index, cosine) per row of workers' heaps over disjoint vectors: the same keys as one
    heap over them all (not always the same one of equal keys at the floor: ``rescore`` does not rely on it)."""
    if len(heaps) == 1:
        return heaps[0]
    hk, hi, hc = (np.concatenate(part, axis=1) for part in zip(*heaps))
    top = np.argpartition(hk, hk.shape[1] - kept, axis=1)[:, -kept:]
    return tuple(np.take_along_axis(a, top, axis=1) for a in (hk, hi, hc))


def scan(stored: np.ndarray, queries: np.ndarray, prep: Prepared, rows: np.ndarray, wts: np.ndarray,
         consts: np.ndarray, flags: np.ndarray, kept: int):
    """The float32 pass for query rows ``rows`` of the group: the best ``kept`` (key, index, cosine) per row.
    The grid of ``tiles`` is cut into one run per numba thread; each worker, BLAS on one thread, scans each tile's
    product while it is in cache into heaps of its own, then the heaps are merged. Neither the cosines nor the
    kept keys depend on the thread count, so neither does the run (certified by ``rescore``)."""
    nq = len(rows)
    t, a_t, a_c = prep.as_of[rows], prep.a_t[rows], prep.a_c[rows]
    vec = prep.vector_args()
    qf = np.ascontiguousarray(queries[rows], dtype=np.float32)

    def heaps():
        return (np.full((nq, kept), -np.inf, dtype=np.float32), np.full((nq, kept), -1, dtype=np.int64),
                np.zeros((nq, kept), dtype=np.float32))

    grid = tiles(nq, len(stored))
    with blas_threads(1):
        if not thread_safe():  # one caller thread: the tiles in order, each scanned on numba's threads
            h = heaps()
            kernel = scan_block if tile_shape(nq, len(stored))[0] >= SERIAL_BELOW else scan_block_serial
            products(stored, qf, grid, kernel, (t, a_t, a_c, vec, wts, consts, flags, *h))
            return h
        parts = shares(grid, get_num_threads())
        out = [heaps() for _ in parts] or [heaps()]  # no tile (no vector): nothing kept
        _workers([(stored, qf, part, scan_block, (t, a_t, a_c, vec, wts, consts, flags, *h))
                  for part, h in zip(parts, out)])
    return merge(out, kept)


def _workers(jobs: list[tuple]) -> None:
    """``products(*job)`` per job, one thread each (the caller's for one), numba on one thread in each."""
    if len(jobs) <= 1:
        for job in jobs:
            one_thread(products, *job)
        return
    with ThreadPoolExecutor(len(jobs)) as pool:
        list(pool.map(lambda job: one_thread(products, *job), jobs))


def tile_products(stored: np.ndarray, queries: np.ndarray) -> None:
    """The BLAS products of ``scan``'s tiles alone, on its threads (where its time goes: ``tools/perf``)."""
    qf = np.ascontiguousarray(queries, dtype=np.float32)
    with blas_threads(1):
        _workers([(stored, qf, part) for part in shares(tiles(len(qf), len(stored)), get_num_threads())])


def rescore(sv, cols: Columns, hk, hi, hc, as_of: np.ndarray, k: int, e_key: float, need_conf: bool):
    """Float64 re-score of the kept candidates by ``scoring.fused`` (the specification's values, from the same
    float32 cosines), ranked by the tie rule; (ranked, fused scores, C of the top hit, certified) per query."""
    empty = hi < 0
    ids = np.where(empty, 0, hi)
    score, key, conf = fused(sv, cols, hc.astype(np.float64), as_of, ids, need_confidence=need_conf)
    key[empty] = -np.inf
    order = np.lexsort((ids, -key), axis=1)[:, :k]
    top_key = np.take_along_axis(key, order, axis=1)
    found = np.isfinite(top_key)
    ranked = np.where(found, np.take_along_axis(ids, order, axis=1), -1)
    top = np.where(found, np.take_along_axis(score, order, axis=1), np.nan)
    conf_top = np.take_along_axis(conf, order[:, :1], axis=1)[:, 0] if need_conf and k else np.full(len(hk), np.nan)
    root = hk.min(axis=1).astype(np.float64)
    kth = top_key[:, k - 1] if k else np.full(len(hk), np.inf)
    certified = (root == -np.inf) | (kth > root + e_key)
    return ranked, top, conf_top, certified


class _Clock:
    """Adds each call's seconds under its step name to ``seconds`` (when given) and counts the calls."""

    def __init__(self, seconds: dict | None):
        self.seconds = seconds

    def __call__(self, step: str, fn, *args):
        if self.seconds is None:
            return fn(*args)
        t = time.perf_counter()
        out = fn(*args)
        self.seconds[step] = self.seconds.get(step, 0.0) + time.perf_counter() - t
        self.seconds[step + "_calls"] = self.seconds.get(step + "_calls", 0) + 1
        return out


def exhaustive_top_k_f32(sv, cols: Columns, stored: np.ndarray, queries: np.ndarray, as_of: np.ndarray, k: int,
                         extra: int = EXTRA, seconds: dict | None = None):
    """(ranked (Q, k) corpus indices, -1 padded; their fused scores, NaN padded; the top hit's C; the query rows
    left uncertified at ``MAX_KEPT`` candidates, for the caller's float64 path) of every stored vector.
    ``seconds``: if given, the time of each step (prepare, scan, rescore) and the scans run are added to it."""
    clock = _Clock(seconds)
    nq = len(queries)
    w, tp, cp, pol = sv.weights, sv.temporal, sv.conf_params, sv.policy
    need_conf = pol.reported_confidence == "live_confidence"
    ranked = np.full((nq, k), -1, dtype=np.int64)
    top, conf_top = np.full((nq, k), np.nan), np.full(nq, np.nan)
    if nq == 0 or k == 0 or len(stored) == 0:
        return ranked, top, conf_top, np.zeros(0, dtype=np.int64)
    deprio, excl_dorm = pol.dormant == "deprioritize", sv._excludes_dormant()
    fb = cols.fb_pos - cols.fb_neg
    e_key, e_conf = rounding_bound(w, tp.expired_score, cp.min_confidence, float(np.abs(cols.base).max()),
                                   float(np.abs(fb).max()), float(np.abs(cols.access).max()),
                                   float(np.abs(cols.rel).max()), deprio)
    wts = np.array([w.semantic / w.total(), w.temporal / w.total(), w.confidence / w.total()], dtype=np.float32)
    consts = np.array([tp.expired_score, cp.min_confidence, _f32_below(cp.dormant_threshold - e_conf)],
                      dtype=np.float32)
    kflags = np.array([deprio, excl_dorm])
    flags = {"exclude_created_after": pol.exclude_created_after_as_of,
             "exclude_deprecated": "DEPRECATED" in sv.exclude, "exclude_archived": "ARCHIVED" in sv.exclude}
    fp = {"t_half": tp.half_life_days, "c_half": cp.half_life_days, "w_total": w.total()}
    pending = []
    for group in query_groups(as_of, min(tp.half_life_days, cp.half_life_days)):
        prep = clock("prepare", Prepared, cols, as_of[group], fp, flags)
        rows, kept = np.arange(len(group)), k + extra
        while rows.size:
            hk, hi, hc = clock("scan", scan, stored, queries[group], prep, rows, wts, consts, kflags, kept)
            r, s, c, ok = clock("rescore", rescore, sv, cols, hk, hi, hc, as_of[group[rows]], k, e_key, need_conf)
            done = group[rows[ok]]
            ranked[done], top[done], conf_top[done] = r[ok], s[ok], c[ok]
            rows, kept = rows[~ok], kept * 4
            if rows.size and kept > MAX_KEPT:
                pending.append(group[rows])
                break
    return ranked, top, conf_top, np.concatenate(pending) if pending else np.zeros(0, dtype=np.int64)
