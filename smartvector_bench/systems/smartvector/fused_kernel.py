"""Exhaustive four-signal top-k as one compiled pass (numba) over blocks of BLAS cosines: the fast path of
``SmartVector.score`` (``signals/`` temporal, confidence and fusion, then the status key).

The numpy path (``scoring.fused``) makes ~25 passes over (Q, N) float64 arrays and pays numpy's float64 ``exp2``
on every entry; this kernel reads each cosine once, keeps a size-k heap per query and computes the signals only
where an upper bound of the key can still enter it:

    key = (w_s clip(cos, 0, 1) + w_t T + w_c C + w_r R) / W        (the paper's fused score, minus 2 if dormant
                                                                     under ``dormant: deprioritize``)
    T   = 2^(-max(t - created, 0) / H_T) inside [valid_from, valid_to), else expired_score
    C   = min(1, clip(max(c_min, C_0 2^(-max(t - decay_from, 0) / H_C)) + fb_pos - fb_neg, c_min, 1) + access)

Bounds, cheapest first: T <= max(1, expired_score), C <= 1, R <= max R (one compare per entry); then T and C from
``2^(-t/H) * 2^(created/H)`` (products of per-query and per-vector constants: no ``exp2`` per entry), with
slack far above their rounding. Both only skip entries that cannot reach the current k-th key, so the top k
is the exhaustive one. Each step is the floating-point operation of ``fused`` in the same order; only
``exp2`` differs (libm here, numpy's SIMD routine there: 1 ulp on ~5% of arguments), so scores agree with the
numpy path to ~1e-16 and ranks agree except between keys within an ulp of each other.

Queries are scanned in ascending corpus index, so a later entry with an equal key never displaces a kept
one: ties go to the lower index, the harness's rule. Each query is one thread's work (``prange``), so the
result does not depend on the thread count.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

# Elements of one (queries, vectors) float32 cosine block: 16 MB, cache-sized for the scan that follows.
BLOCK_ENTRIES = 1 << 22
BOUND_SLACK = 1e-9  # far above the rounding of the bound's terms (~1e-15)


@njit(cache=True, inline="always")
def _worse(k1, i1, k2, i2):
    return k1 < k2 or (k1 == k2 and i1 > i2)


@njit(cache=True, inline="always")
def _decayed(t, start, half):
    """The decay term of ``temporal_signal`` / ``decayed_confidence``, 2^(-max(t - start, 0) / H), in ``fused``'s
    order (negate, divide, exp2)."""
    x = t - start
    if x < 0.0:
        x = 0.0
    x = -x
    x /= half
    return np.exp2(x)


@njit(parallel=True, cache=True)
def _exp2_over(a, half):
    """2^(a / H) per entry (inf on overflow: that only disables the bound using it)."""
    out = np.empty_like(a)
    for i in prange(a.size):
        out[i] = np.exp2(a[i] / half)
    return out


@njit(cache=True, inline="always")
def _live(decayed, fb_pos, fb_neg, access, cmin):
    """``live_confidence`` from the decayed base C_0 2^(-age/H_C): floor c_min, feedback, clip, accesses, cap 1
    (monotone in ``decayed``, so a bound of it gives a bound of C)."""
    c = decayed
    if c < cmin:
        c = cmin
    c += fb_pos
    c -= fb_neg
    if c < cmin:
        c = cmin
    if c > 1.0:
        c = 1.0
    c += access
    if c > 1.0:
        c = 1.0
    return c


@njit(parallel=True, cache=True)
def scan_block(cos, j0, as_of, created, valid_from, valid_to, decay_from, base, fb_pos, fb_neg, access, rel,
               succ_from, archived_at, ingested_at, exp_created, exp_decay, fp, flags, hk, hi, hs, hc):
    """Fold the cosine block ``cos`` (Q, B) of vectors ``j0 .. j0 + B`` into the per-query heaps ``hk`` (key),
    ``hi`` (index), ``hs`` (fused score), ``hc`` (live confidence C), each (Q, k), root = the worst kept.

    ``fp``: H_T, expired_score, H_C, c_min, dormant_threshold, w_s, w_t, w_c, W, max R.
    ``flags``: deprioritize dormant, exclude dormant, exclude deprecated, exclude archived, exclude created
    (or ingested) after as_of. ``exp_created`` = 2^(created / H_T), ``exp_decay`` = 2^(decay_from / H_C)."""
    t_half, expired, c_half, cmin, dorm = fp[0], fp[1], fp[2], fp[3], fp[4]
    ws, wt, wc, wtot, rel_max = fp[5], fp[6], fp[7], fp[8], fp[9]
    deprio, excl_dorm, excl_dep, excl_arch, excl_after = flags[0], flags[1], flags[2], flags[3], flags[4]
    nq, nb = cos.shape
    k = hk.shape[1]
    glob = wt * max(1.0, expired) + wc + rel_max  # T <= max(1, expired_score), C <= 1 (weights >= 0)
    for q in prange(nq):
        t = as_of[q]
        a_t = np.exp2(-t / t_half) * (1.0 + 1e-12)
        a_c = np.exp2(-t / c_half) * (1.0 + 1e-12)
        for b in range(nb):
            j = j0 + b
            s = np.float64(cos[q, b])
            if s < 0.0:
                s = 0.0
            if s > 1.0:
                s = 1.0
            root = hk[q, 0]
            if (ws * s + glob) / wtot + BOUND_SLACK < root:
                continue
            if (excl_dep and t >= succ_from[j]) or (excl_arch and t >= archived_at[j]) or \
                    (excl_after and (t < created[j] or t < ingested_at[j])):
                continue
            tu = a_t * exp_created[j]
            if tu > 1.0:
                tu = 1.0
            if tu < expired:
                tu = expired
            cu = _live(base[j] * a_c * exp_decay[j], fb_pos[j], fb_neg[j], access[j], cmin)
            # NaN bounds (overflowed constants) fall through to the exact score
            if (ws * s + wt * tu + wc * cu + rel[j]) / wtot + BOUND_SLACK < root:
                continue
            # exact, as fused: the same operations in the same order
            temporal = _decayed(t, created[j], t_half)
            if t >= valid_to[j] or t < valid_from[j]:
                temporal = expired
            conf = _decayed(t, decay_from[j], c_half)
            conf *= base[j]
            conf = _live(conf, fb_pos[j], fb_neg[j], access[j], cmin)
            dormant = conf < dorm
            if excl_dorm and dormant:
                continue
            s *= ws
            s += temporal * wt
            s += conf * wc
            s += rel[j]
            s /= wtot
            key = s
            if deprio and dormant:
                key -= 2.0
            if not _worse(hk[q, 0], hi[q, 0], key, j):
                continue
            p = 0  # replace the root and sift down
            while True:
                c = 2 * p + 1
                if c >= k:
                    break
                if c + 1 < k and _worse(hk[q, c + 1], hi[q, c + 1], hk[q, c], hi[q, c]):
                    c += 1
                if _worse(hk[q, c], hi[q, c], key, j):
                    hk[q, p] = hk[q, c]
                    hi[q, p] = hi[q, c]
                    hs[q, p] = hs[q, c]
                    hc[q, p] = hc[q, c]
                    p = c
                else:
                    break
            hk[q, p] = key
            hi[q, p] = j
            hs[q, p] = s
            hc[q, p] = conf


def exhaustive_top_k(stored: np.ndarray, queries: np.ndarray, as_of: np.ndarray, cols, fp: np.ndarray,
                     flags: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ranked (Q, k) corpus indices, -1 padded; their fused scores, NaN padded; the top hit's C per query)
    by the four-signal key of every stored vector. ``cols``: the retriever's per-vector columns (float64);
    ``stored``: the index's (N, d) float32 vectors; cosines are ``queries @ stored.T`` in float32, blocked."""
    n, nq = len(stored), len(queries)
    qf = np.ascontiguousarray(queries, dtype=np.float32)
    as_of = np.ascontiguousarray(as_of, dtype=np.float64)
    hk = np.full((nq, k), -np.inf)
    hi = np.full((nq, k), n, dtype=np.int64)
    hs = np.zeros((nq, k))
    hc = np.zeros((nq, k))
    if n and nq and k:
        c = {f: np.ascontiguousarray(getattr(cols, f), dtype=np.float64) for f in cols.__dataclass_fields__}
        # compiled: numpy's float64 exp2 over every vector would be a large share of one query's time at 1M
        exp_created, exp_decay = _exp2_over(c["created"], fp[0]), _exp2_over(c["decay_from"], fp[2])
        q_block = min(nq, 4096)
        width = int(min(n, max(1024, BLOCK_ENTRIES // q_block)))
        out = np.empty((q_block, width), dtype=np.float32)
        for q0 in range(0, nq, q_block):
            qs = slice(q0, min(nq, q0 + q_block))
            for j0 in range(0, n, width):
                blk = stored[j0:j0 + width]
                if qs.stop - qs.start == q_block and len(blk) == width:
                    cos = np.matmul(qf[qs], blk.T, out=out)  # the buffer is reused: no page faults per block
                else:
                    cos = qf[qs] @ blk.T
                scan_block(cos, j0, as_of[qs], c["created"], c["valid_from"], c["valid_to"], c["decay_from"],
                           c["base"], c["fb_pos"], c["fb_neg"], c["access"], c["rel"], c["succ_from"],
                           c["archived_at"], c["ingested_at"], exp_created, exp_decay, fp, flags,
                           hk[qs], hi[qs], hs[qs], hc[qs])
    order = np.lexsort((hi, -hk), axis=1)
    key = np.take_along_axis(hk, order, axis=1)
    kept = np.isfinite(key)
    ranked = np.where(kept, np.take_along_axis(hi, order, axis=1), -1)
    fused = np.where(kept, np.take_along_axis(hs, order, axis=1), np.nan)
    conf_top = np.where(kept[:, 0], np.take_along_axis(hc, order[:, :1], axis=1)[:, 0], np.nan) if k else \
        np.full(nq, np.nan)
    return ranked, fused, conf_top
