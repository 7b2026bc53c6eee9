"""SmartVector's re-ranking search (``candidates: C``): FAISS's top-C by cosine plus, per as_of group, the
vectors with the highest key bound (:mod:`smartvector_bench.systems.smartvector.bounds`), scored with
:func:`smartvector_bench.systems.smartvector.scoring.fused` and certified against the bound (see the
"Search modes" section of :mod:`smartvector_bench.systems.smartvector.retriever`).
"""

from __future__ import annotations

import time
import numpy as np

from smartvector_bench.core.run import rank_by_score
from smartvector_bench.systems.smartvector.bounds import Blocks, block_bound, key_bound, top_bounds
from smartvector_bench.systems.smartvector.scoring import Columns, dedupe_rows, fused
from smartvector_bench.systems.smartvector.params import SearchState


COSINE_SLACK = 1e-5  # BLAS and FAISS's kernel differ by ~1e-7 on a cosine: the C-th cosine plus this bounds the rest


def rerank(sv: SearchState, cols: Columns, query_vectors: np.ndarray, as_of: np.ndarray, k: int, out: tuple) -> None:
    sp = sv.search_params
    n, q = len(sv.corpus), len(query_vectors)
    c = min(sp.candidates, n)
    p = sp.prior_candidates
    if p is None:  # the share of N with the highest bound: more teams active at once, more contenders
        p = max(c, int(np.ceil(sp.prior_share * n)))
    p = min(p, n)
    qv = np.ascontiguousarray(query_vectors, dtype=np.float32)
    t = time.perf_counter()
    sem_c, ids_c = sv._index.search(qv, c)
    faiss_s = time.perf_counter() - t
    complete = c >= n and sv._index.exact  # every row is a cosine candidate: nothing to bound or add
    certify = sp.certify and sv._index.exact and not complete
    use_bound = (p > 0 or certify) and not complete
    w = sv.weights
    fallback: list[np.ndarray] = []
    stats = {"as_of_groups": 0, "scored_per_query": 0.0, "widened": 0}
    stored = sv._index.stored() if use_bound else None
    blocks = Blocks.build(cols) if use_bound else None
    widest = max(p, min(n, int(sp.max_prior_share * n)))
    for grp in _groups(sv, as_of, use_bound):
        stats["as_of_groups"] += 1
        if not use_bound:  # cosine candidates only: score them all
            ids = ids_c[grp]
            _rank_with_prior(sv, cols, grp, ids, sem_c[grp], np.zeros(0, dtype=np.int64), np.zeros(0), qv,
                                  None, as_of, k, out)
            stats["scored_per_query"] += ids.shape[1] * len(grp)
            continue
        t_lo, t_hi = float(as_of[grp].min()), float(as_of[grp].max())
        found: list = [None, None]  # the highest bounds found so far: rows and values, descending

        def top(m: int) -> tuple[np.ndarray, np.ndarray]:
            if found[0] is None or len(found[0]) <= min(m, n - 1):
                found[:] = top_bounds(sv, blocks, t_lo, t_hi, m)
            return found[0], found[1]

        rows, p_g = grp, p
        while True:
            if 0 < p_g < n:
                order, vals = top(p_g)
                srt = np.argsort(order[:p_g])
                prior, b_prior, rest = order[:p_g][srt], vals[:p_g][srt], float(vals[p_g])
            elif p_g >= n:
                prior, rest = np.arange(n), -np.inf
                b_prior = key_bound(sv, cols, t_lo, t_hi)
            else:
                prior, b_prior = np.zeros(0, dtype=np.int64), np.zeros(0)
                rest = float(block_bound(sv, blocks, t_lo, t_hi).max(initial=-np.inf))
            kth, scored = _rank_with_prior(sv, cols, rows, ids_c[rows], sem_c[rows], prior, b_prior, qv,
                                                stored, as_of, k, out)
            stats["scored_per_query"] += scored
            if not certify:
                break
            cos_c = np.clip(sem_c[rows, c - 1], 0.0, 1.0) + COSINE_SLACK
            limit = w.semantic * cos_c / w.total() + rest  # any vector that is not a candidate
            bad = ~(kth > limit) & np.isfinite(limit)
            if not bad.any():
                break
            rows, kth, cos_c = rows[bad], kth[bad], cos_c[bad]
            # A vector outside the C-th cosine can only reach a row's k-th key if its bound is at least
            # kth - w_s clip(cos_C) / W: every vector with such a bound becomes a prior candidate (one
            # widening, sized by the bound order), so the retry certifies unless that is over the cap.
            thr = kth - w.semantic * cos_c / w.total()
            order, vals = top(widest)
            desc = -vals
            # a row with fewer than k scorable candidates has no k-th key yet: 4x the list
            needed = np.where(np.isfinite(thr), np.searchsorted(desc, -thr, side="right"),
                              min(widest, 4 * max(p_g, 1)) if p_g < widest else widest + 1)
            over = needed >= min(len(order), widest + 1) if widest < n else np.zeros(len(rows), dtype=bool)
            if over.any():  # the bound cannot separate these queries: score them exhaustively
                fallback.append(rows[over])
                rows, needed = rows[~over], needed[~over]
            if not len(rows):
                break
            p_g = int(min(n, max(p_g + 1, needed.max())))
            stats["widened"] += len(rows)
    fb = np.sort(np.concatenate(fallback)) if fallback else np.zeros(0, dtype=np.int64)
    if len(fb):
        sv._exhaustive(cols, query_vectors, as_of, k, fb, out)
    sv.last_search = {"mode": "rerank", "queries": q, "candidates": c, "prior_candidates": p if use_bound
                        else 0, "index": sv._index.kind, "certified": certify,
                        "as_of_groups": stats["as_of_groups"], "widened_queries": stats["widened"],
                        "fallback_queries": int(len(fb)),
                        "scored_per_query": stats["scored_per_query"] / max(q, 1), "faiss_seconds": faiss_s}


def _rank_with_prior(sv: SearchState, cols: Columns, rows: np.ndarray, ids: np.ndarray, sem: np.ndarray,
                     prior: np.ndarray, b_prior: np.ndarray, qv: np.ndarray, stored: np.ndarray | None,
                     as_of: np.ndarray, k: int, out: tuple) -> tuple[np.ndarray, int]:
    """Exact four-signal top-k of query ``rows`` among their cosine candidates (``ids``, ``sem``: (R, C))
    and the group's ``prior`` vectors (ascending row indices, bounds ``b_prior``), written to ``out``;
    returns the k-th keys and the number of entries scored.

    A prior vector's key is at most ``w_s clip(cos) / W + bound``. The cosine candidates and the ``width``
    prior vectors with the best such upper bound (a few times k) are scored; a row where an unscored prior
    vector's upper bound still reaches the k-th key found is scored again with 4x the width, until none
    does. No (R, C + P) id array is built."""
    need_conf = sv.policy.reported_confidence == "live_confidence"
    valid = dedupe_rows(ids)
    scored = ids.size
    if not len(prior):
        return _rank_into(sv, cols, rows, ids, sem, valid, as_of, k, out, need_conf), scored
    w = sv.weights
    # the prior candidates' cosines from the stored vectors (one BLAS product per group; equal to FAISS's
    # to float32 rounding, ~1e-7)
    cos = qv[rows] @ stored[prior].T
    upper = np.clip(cos, 0.0, 1.0).astype(np.float64)
    upper *= w.semantic / w.total()
    upper += b_prior
    # a prior vector that is already a cosine candidate of the row is scored there
    pos = np.minimum(np.searchsorted(prior, ids), len(prior) - 1)
    r_hit, c_hit = np.nonzero((prior[pos] == ids) & valid)
    upper[r_hit, pos[r_hit, c_hit]] = -np.inf
    kth = np.full(len(rows), -np.inf)
    left = np.arange(len(rows))
    width = max(4 * k, 64)
    ids_v = np.where(valid, ids, -1)
    while len(left):
        up = upper[left]
        if width >= len(prior):
            sel = np.broadcast_to(np.arange(len(prior)), (len(left), len(prior)))
        else:
            sel = np.argpartition(-up, width - 1, axis=1)[:, :width]
        both = np.concatenate([ids_v[left], prior[sel]], axis=1)
        sem2 = np.concatenate([sem[left], np.take_along_axis(cos[left], sel, axis=1).astype(np.float64)],
                              axis=1)
        # -inf upper bounds (excluded, or a cosine candidate already) need no scoring
        ok = np.concatenate([valid[left], np.take_along_axis(up, sel, axis=1) > -np.inf], axis=1)
        kth[left] = _rank_into(sv, cols, rows[left], both, sem2, ok, as_of, k, out, need_conf)
        scored += both.size
        if width >= len(prior):
            break
        np.put_along_axis(up, sel, -np.inf, axis=1)
        left = left[(up >= kth[left, None]).any(axis=1)]  # an unscored prior vector could still enter
        width *= 4
    return kth, scored


def _rank_into(sv: SearchState, cols: Columns, grp: np.ndarray, ids: np.ndarray, sem: np.ndarray, valid: np.ndarray,
               as_of: np.ndarray, k: int, out: tuple, need_conf: bool) -> np.ndarray:
    """Score (G, M) candidates exactly, rank them by the tie rule, write the rows; returns the k-th keys."""
    m = ids.shape[1]
    safe = np.where(valid, ids, 0)
    score, key, conf = fused(sv, cols, np.where(valid, sem, 0.0), as_of[grp], safe, np.float64, need_conf)
    key[~valid] = -np.inf
    # rank_by_score breaks ties by the candidate's corpus index; the column rides along in the low digits
    # (each corpus index appears once per row among the valid candidates)
    code, top = rank_by_score(key, k, candidates=safe * m + np.arange(m))
    pos = np.where(code >= 0, code % m, 0)
    ranked = np.where(code >= 0, code // m, -1)
    r = np.arange(len(grp))[:, None]
    sv._emit(grp, ranked, score[r, pos], conf[r[:, 0], pos[:, 0]] if need_conf else None, out)
    kth = top[:, k - 1] if k >= 1 else np.full(len(grp), np.inf)
    return np.where(np.isnan(kth), -np.inf, kth)


def _groups(sv: SearchState, as_of: np.ndarray, by_time: bool) -> list[np.ndarray]:
    """Query rows in blocks of at most query_batch; with ``by_time``, sorted by as_of and each block at
    most group_days wide."""
    q, batch = len(as_of), sv.policy.query_batch
    if not by_time:
        return [np.arange(lo, min(q, lo + batch)) for lo in range(0, q, batch)]
    order = np.argsort(as_of, kind="stable")
    groups, start = [], 0
    for i in range(1, q + 1):
        if i == q or i - start >= batch or as_of[order[i]] - as_of[order[start]] > sv.search_params.group_days:
            groups.append(order[start:i])
            start = i
    return groups

