"""Descriptive summaries used by experiment=lvl_eval: shares with a bootstrap CI, latency percentiles,
precision/recall counts, and the rank of the first relevant result when one result stands for a set of rows.

Values are rounded to fixed decimals so that the written JSON is the same on every run.
"""

from __future__ import annotations

import numpy as np

from smartvector_bench.core.evaluation.metrics.bootstrap import bootstrap_mean_ci


def rounded(x, nd: int = 6):
    """``x`` rounded to ``nd`` decimals; None for None, NaN or inf (JSON has no NaN)."""
    return None if x is None or not np.isfinite(x) else round(float(x), nd)


def ratio(a: int, b: int) -> float | None:
    """``a / b`` rounded; None when ``b`` is 0."""
    return rounded(a / b) if b else None


def share_stats(values: list[float], n_boot: int, seed: int) -> dict:
    """Mean with a 95% bootstrap CI, median, p90, min, max of per-document shares."""
    x = np.asarray(values, dtype=np.float64)
    if not len(x):
        return {"n": 0, "mean": None, "ci": [None, None], "median": None, "p90": None, "min": None, "max": None}
    lo, hi = bootstrap_mean_ci(x, n_boot=n_boot, seed=seed)
    return {"n": int(len(x)), "mean": rounded(x.mean()), "ci": [rounded(lo), rounded(hi)],
            "median": rounded(np.median(x)), "p90": rounded(np.quantile(x, 0.9)), "min": rounded(x.min()),
            "max": rounded(x.max()), "zero_share": rounded(np.mean(x == 0))}


def latency_stats(seconds: np.ndarray) -> dict:
    """Percentiles (linear interpolation, ``np.quantile``) in milliseconds over every repetition."""
    ms = np.asarray(seconds, dtype=np.float64).reshape(-1) * 1000.0
    if not len(ms):
        return {"n": 0}
    p50, p95, p99 = np.quantile(ms, [0.5, 0.95, 0.99])
    return {"n": int(len(ms)), "p50": rounded(p50, 4), "p95": rounded(p95, 4), "p99": rounded(p99, 4),
            "mean": rounded(ms.mean(), 4), "min": rounded(ms.min(), 4), "max": rounded(ms.max(), 4)}


def prf(tp: int, predicted: int, actual: int) -> dict:
    """Precision = tp / predicted and recall = tp / actual (None when the denominator is 0), with the counts."""
    return {"tp": int(tp), "predicted": int(predicted), "actual": int(actual),
            "precision": ratio(tp, predicted), "recall": ratio(tp, actual)}


def first_relevant_rank(mapped: list, relevant: set) -> int | None:
    """1-based rank of the first result whose mapped rows meet ``relevant`` (None if none does).

    ``mapped[r]`` is the collection of corpus rows the result at rank r+1 stands for (one returned lake row can
    stand for several corpus rows that hold the same text). Reciprocal rank is ``1 / rank`` (TREC MRR, Voorhees,
    "The TREC-8 Question Answering Track Report", 1999), which ``ir_measures``' RR@10 computes for one corpus row per
    result. ``evaluator.judge_sets`` is the vectorised
    form experiment=lvl_eval judges with, tested against this one.
    """
    for r, rows in enumerate(mapped, 1):
        if relevant.intersection(rows):
            return r
    return None
