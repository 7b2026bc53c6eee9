"""Every score and confidence an ``ltr`` run could take on another CPU (``Run.bounds``), for the regression gate.

A tree's output is a step function of its features, so a float32 cosine or BM25 score that moves by rounding
(``core.run.rounding.score_noise``) changes a candidate's score only when it crosses a split threshold, and changes the
candidate set only at a list's cut-off. Here, per query:

- **presence**: a chunk is surely a candidate when some list would keep it at its worst possible rank
  (``rank_bounds`` <= depth), possibly one when some list could keep it at its best;
- **score**: each noisy feature (cosine, cosine_gap, bm25, bm25_ratio) may sit anywhere within twice its own noise
  (once for the feature, once for a threshold learnt from training features that moved too); the model is
  evaluated on both sides of every threshold in that box (the output is constant between thresholds, so
  this is its exact range over the box); a chunk that may drop out gets lo = -inf;
- **confidence** (the top-1's softmax share): over every chunk that could be the top-1, the share with its
  lowest score against every possible candidate at its highest, and the reverse.

Assumed: the model trained on the other CPU has the same trees (a tie in split gain could pick another split;
the gate then names the lines that differ).
"""

from __future__ import annotations

import itertools

import numpy as np

from smartvector_bench.core.run.rounding import rank_bounds, score_noise
from smartvector_bench.systems.ltr.features import FEATURES

NOISY = ("cosine", "cosine_gap", "bm25", "bm25_ratio")  # computed from float32 scores; the rest are exact
MAX_VARIANTS = 4096  # per candidate; beyond this its score is left unbounded (never seen)


def thresholds(model) -> dict[int, np.ndarray]:
    """Per feature column, the sorted distinct numerical split thresholds of a LightGBM booster
    (``dump_model``; a split sends ``x <= threshold`` left)."""
    out: dict[int, list[float]] = {}
    stack = [t["tree_structure"] for t in model.dump_model()["tree_info"]]
    while stack:
        node = stack.pop()
        if "split_feature" not in node:
            continue
        if node.get("decision_type") == "<=":
            out.setdefault(int(node["split_feature"]), []).append(float(node["threshold"]))
        stack += [node["left_child"], node["right_child"]]
    return {f: np.unique(v) for f, v in out.items()}


def presence(lists: list[np.ndarray], depth: int) -> tuple[np.ndarray, np.ndarray]:
    """(possible, sure) (Q, N) booleans: could / must a chunk be among some list's ``depth`` best on another
    CPU. ``lists`` are (Q, N) scores, -inf = excluded."""
    possible = np.zeros(lists[0].shape, dtype=bool)
    sure = np.zeros_like(possible)
    for scores in lists:
        for i, row in enumerate(scores):
            live = np.flatnonzero(np.isfinite(row))
            best, worst = rank_bounds(row, row[live])
            possible[i, live] |= best <= depth
            sure[i, live] |= worst <= depth
    return possible, sure


def feature_noise(feats: np.ndarray) -> np.ndarray:
    """(..., len(NOISY)) how far each noisy feature may move on another CPU (``pair_features``' formulas)."""
    col = {f: feats[..., FEATURES.index(f)] for f in NOISY}
    cos, gap, bm25, ratio = col["cosine"], col["cosine_gap"], col["bm25"], col["bm25_ratio"]
    best_cos = cos - gap
    with np.errstate(invalid="ignore", divide="ignore"):
        best_bm25 = np.where(ratio > 0, bm25 / np.where(ratio > 0, ratio, 1.0), 0.0)
        rel = np.where(bm25 > 0, score_noise(bm25) / np.where(bm25 > 0, bm25, 1.0)
                       + score_noise(best_bm25) / np.where(best_bm25 > 0, best_bm25, 1.0), 0.0)
    return np.stack([score_noise(cos), score_noise(cos) + score_noise(best_cos),
                     np.where(bm25 > 0, score_noise(bm25), 0.0), ratio * rel], axis=-1)


def score_ranges(model, feats: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of each row's model score (``feats`` (M, F), ``scores`` their predictions) over the box of its
    noisy features, each within twice its noise."""
    lo, hi = scores.copy(), scores.copy()
    cuts = thresholds(model)
    cols = [FEATURES.index(f) for f in NOISY]
    reach = 2.0 * feature_noise(feats) * (1.0 + 1e-9)
    choices: dict[int, list[list[tuple[int, float]]]] = {}
    for j, c in enumerate(cols):
        t = cuts.get(c)
        if t is None:
            continue
        first = np.searchsorted(t, feats[:, c] - reach[:, j], side="left")
        last = np.searchsorted(t, feats[:, c] + reach[:, j], side="right")
        for m in np.flatnonzero(last > first):
            near = t[first[m]:last[m]]
            # just either side of each cut, far below any noise; not the cut itself: LightGBM reads |x| <= 1e-35 as
            # zero, so a value at its zero cut (-1e-35, between negatives and 0) goes right, not left
            step = 1e-9 * np.maximum(1.0, np.abs(near))
            choices.setdefault(int(m), []).append([(c, float(v)) for v in (*(near - step), *(near + step))])
    rows, owner = [], []
    for m, per_feature in choices.items():
        if np.prod([len(x) for x in per_feature]) > MAX_VARIANTS:
            lo[m], hi[m] = -np.inf, np.inf
            continue
        for combo in itertools.product(*per_feature):
            row = feats[m].copy()
            for c, v in combo:
                row[c] = v
            rows.append(row)
            owner.append(m)
    if rows:
        pred = model.predict(np.asarray(rows))
        owner = np.asarray(owner)
        np.minimum.at(lo, owner, pred)
        np.maximum.at(hi, owner, pred)
    return lo, hi


def softmax_bounds(lo: np.ndarray, hi: np.ndarray, sure: np.ndarray) -> tuple[float, float]:
    """Bounds on the top-1's softmax share over one query's candidates: each possible candidate scores within
    [lo, hi] (finite) if present; those with ``sure`` are present. NaN when none could be present."""
    if not len(lo):
        return np.nan, np.nan
    floor = np.max(lo[sure]) if sure.any() else -np.inf       # the top-1 scores at least every sure candidate
    shift = np.max(hi)
    e_lo, e_hi = np.exp(lo - shift), np.exp(hi - shift)
    sure_lo, all_hi = np.sum(np.where(sure, e_lo, 0.0)), np.sum(e_hi)
    low, high = np.inf, -np.inf
    for t in np.flatnonzero(hi >= floor):
        top_lo = np.exp(max(lo[t], floor) - shift)
        low = min(low, top_lo / (top_lo + all_hi - e_hi[t]))
        high = max(high, e_hi[t] / (e_hi[t] + sure_lo - (e_lo[t] if sure[t] else 0.0)))
    return float(np.clip(low, 0.0, 1.0)), float(np.clip(high, 0.0, 1.0))


def ltr_bounds(model, corpus, versions, as_of: np.ndarray, cos: np.ndarray, bm25: np.ndarray, window: np.ndarray,
               depth: int, ranked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``Run.bounds`` (Q, k, 2) of the hits ``ranked`` and ``Run.confidence_bounds`` (Q, 2) of an ``ltr``
    search whose inputs were ``cos``, ``bm25`` (Q, N) and ``window`` (Q, N in force). The features of every
    possible candidate are computed as ``LTR._candidates`` computes them: the best cosine and BM25 of a query
    are always among its sure candidates (first of their lists), so an extra candidate changes no other row."""
    from smartvector_bench.systems.ltr.features import pair_features

    q = len(cos)
    lists = [cos, np.where(window, cos, -np.inf), np.where(bm25 > 0, bm25, -np.inf)]
    possible, sure = presence(lists, depth)
    cand = np.full((q, max(1, int(possible.sum(axis=1).max(initial=0)))), -1, dtype=np.int64)
    for i in range(q):
        idx = np.flatnonzero(possible[i])
        cand[i, :len(idx)] = idx
    valid = cand >= 0
    rows = np.maximum(cand, 0)
    feats = pair_features(corpus, versions, cand, as_of, np.take_along_axis(cos, rows, axis=1),
                          np.take_along_axis(bm25, rows, axis=1), window)
    lo = np.full(cand.shape, np.nan)
    hi = np.full(cand.shape, np.nan)
    if valid.any():
        scores = model.predict(feats[valid])
        lo[valid], hi[valid] = score_ranges(model, feats[valid], scores)
    sure_c = np.take_along_axis(sure, rows, axis=1) & valid
    bounds = np.full((*ranked.shape, 2), np.nan)
    conf = np.full((q, 2), np.nan)
    for i in range(q):
        n = int(valid[i].sum())
        conf[i] = softmax_bounds(lo[i, :n], hi[i, :n], sure_c[i, :n])
        hits = np.flatnonzero(ranked[i] >= 0)
        pos = np.searchsorted(cand[i, :n], ranked[i, hits])
        bounds[i, hits, 0] = np.where(sure_c[i, pos], lo[i, pos], -np.inf)
        bounds[i, hits, 1] = hi[i, pos]
    return bounds, conf
