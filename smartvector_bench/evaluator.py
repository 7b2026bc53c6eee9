"""Score a Run against the queries of one split: point estimates, seeded bootstrap intervals, calibration,
a paired test against a baseline, and a per-category breakdown, as a JSON-ready dict.

Conventions (in addition to those of :mod:`smartvector_bench.metrics`):

* Every query of the split is judged and counts in ``n_queries``. A query with no result is wrong, neither
  stale nor rumour, has reciprocal rank 0 and recall 0.
* A missing confidence (NaN, which a Run uses for "no result") is treated as 0.0 for ECE: the system
  expressed no confidence, and the query is wrong, so it is scored as a calibrated abstention rather than
  dropped (dropping it would reward systems that return nothing on hard queries).
* Stale rate = share of the split's queries whose top-1 is in the query's ``stale`` set (superseded
  versions of the gold fact); rumour rate = top-1 in the ``rumor`` set. Denominator: ``n_queries``.
* Intervals are 95% (``level``) percentile bootstraps over queries with ``n_boot`` resamples. Every metric
  uses the *same* ``seed``, so all intervals of a split are computed on the same resampled query sets
  (and two systems evaluated on the same split with the same seed see the same resamples).
  The per-category ``top1_ci`` uses the same seed over that category's queries.
* Temporal leakage (``leakage_at_10``, when the corpus validity windows are given): the pooled share of
  returned top-10 chunks whose window [valid_from, valid_to) does not contain the query's as_of; its
  interval is a bootstrap of that ratio over queries; ``by_category`` holds it per category (for example
  ``historical``).
* Floats are rounded to 6 decimals; NaN becomes None so the dict survives ``json.dumps(allow_nan=False)``.
"""

from __future__ import annotations

import math

import numpy as np

from .dataset import Queries
from .errors import BenchError
from .metrics import (bootstrap_ci, bootstrap_mean_ci, correct_at_1, ece, in_sets, leakage_rate, leaked,
                      mcnemar_exact, recall_at_k, reciprocal_rank)
from .run import Run

DECIMALS = 6
MRR_K = 10
RECALL_K = 5


def judge(run: Run, queries: Queries) -> dict[str, np.ndarray]:
    """Per-query outcomes, aligned to ``queries``: bool ``correct``, ``stale``, ``rumor``; float ``rr10``, ``r5``."""
    if run.ranked.shape[0] != len(queries):
        raise BenchError(f"run {run.system!r} has {run.ranked.shape[0]} rows but there are {len(queries)} queries")
    top1 = run.top1
    return {
        "correct": correct_at_1(run.ranked, queries.gold),
        "stale": in_sets(top1, queries.stale),
        "rumor": in_sets(top1, queries.rumor),
        "rr10": reciprocal_rank(run.ranked, queries.gold, k=MRR_K),
        "r5": recall_at_k(run.ranked, queries.gold, k=RECALL_K),
    }


def _r(x: float | None) -> float | None:
    if x is None or math.isnan(x):
        return None
    return round(float(x), DECIMALS)


def _ci(bounds: tuple[float, float]) -> list[float | None]:
    return [_r(bounds[0]), _r(bounds[1])]


def _round_bins(bins: dict) -> dict:
    return {
        "n_bins": bins["n_bins"],
        "edges": [_r(e) for e in bins["edges"]],
        "counts": list(bins["counts"]),
        "accuracy": [_r(a) for a in bins["accuracy"]],
        "mean_confidence": [_r(m) for m in bins["mean_confidence"]],
    }


def _point_metrics(j: dict[str, np.ndarray], conf: np.ndarray, n_bins: int) -> tuple[dict, dict]:
    """Point estimates over the given (already subset) per-query arrays; returns (metrics, ece bins)."""
    value, bins = ece(conf, j["correct"], n_bins)
    return {
        "n_queries": int(len(conf)),
        "top1": _r(j["correct"].mean()),
        "stale_rate": _r(j["stale"].mean()),
        "rumor_rate": _r(j["rumor"].mean()),
        "ece": _r(value),
        "mrr_at_10": _r(j["rr10"].mean()),
        "recall_at_5": _r(j["r5"].mean()),
    }, bins


def evaluate_split(run: Run, queries: Queries, split: str, baseline_correct: np.ndarray | None = None,
                   n_boot: int = 1000, seed: int = 0, n_bins: int = 10,
                   windows: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """Metrics of ``run`` on the queries with ``queries.split == split`` (see the module docstring).

    ``baseline_correct`` is a bool array aligned to the full ``queries`` (all splits); when given, the
    result holds ``mcnemar`` (A = baseline, B = this run) and ``mcnemar_p``, else both are None.
    Raises BenchError (a ValueError) if the split has no queries or the arrays are misaligned.
    """
    rows = np.nonzero(np.asarray(queries.split) == split)[0]
    if len(rows) == 0:
        present = sorted({str(s) for s in queries.split})
        raise BenchError(f"split {split!r} has no queries (splits present: {', '.join(present) or 'none'})")
    full = judge(run, queries)
    j = {k: v[rows] for k, v in full.items()}
    conf = np.asarray(run.confidence, dtype=np.float64)[rows]
    conf = np.where(np.isnan(conf), 0.0, conf)  # missing confidence = 0.0 (module docstring)

    out, bins = _point_metrics(j, conf, n_bins)
    boot = {"n_boot": n_boot, "seed": seed}
    out = {
        "n_queries": out["n_queries"],
        "top1": out["top1"],
        "top1_ci": _ci(bootstrap_mean_ci(j["correct"], **boot)),
        "stale_rate": out["stale_rate"],
        "stale_rate_ci": _ci(bootstrap_mean_ci(j["stale"], **boot)),
        "rumor_rate": out["rumor_rate"],
        "rumor_rate_ci": _ci(bootstrap_mean_ci(j["rumor"], **boot)),
        "ece": out["ece"],
        "ece_ci": _ci(bootstrap_ci(lambda c, k: ece(c, k, n_bins)[0], (conf, j["correct"]), **boot)),
        "ece_bins": _round_bins(bins),
        "mrr_at_10": out["mrr_at_10"],
        "mrr_at_10_ci": _ci(bootstrap_mean_ci(j["rr10"], **boot)),
        "recall_at_5": out["recall_at_5"],
        "recall_at_5_ci": _ci(bootstrap_mean_ci(j["r5"], **boot)),
        "mcnemar": None,
        "mcnemar_p": None,
    }

    if baseline_correct is not None:
        base = np.asarray(baseline_correct, dtype=bool)
        if base.shape != (len(queries),):
            raise BenchError(f"baseline_correct must be aligned to all {len(queries)} queries; got shape {base.shape}")
        test = mcnemar_exact(base[rows], j["correct"])
        test["p_value"] = _r(test["p_value"])
        out["mcnemar"] = test
        out["mcnemar_p"] = test["p_value"]

    cats = np.asarray(queries.category, dtype=object)[rows]
    by_category = {}
    for cat in sorted({str(c) for c in cats}):
        sel = np.nonzero(cats == cat)[0]
        metrics, _ = _point_metrics({k: v[sel] for k, v in j.items()}, conf[sel], n_bins)
        metrics["top1_ci"] = _ci(bootstrap_mean_ci(j["correct"][sel], **boot))
        by_category[cat] = metrics
    if windows is not None:
        # Temporal leakage over the top 10 (pooled share of returned chunks), overall and per category.
        leak, ret = leaked(run.ranked[rows], windows[0], windows[1], queries.as_of[rows], k=MRR_K)
        out["leakage_at_10"] = _r(leakage_rate(leak, ret))
        out["leakage_at_10_ci"] = _ci(bootstrap_ci(leakage_rate, (leak, ret), **boot))
        for cat, metrics in by_category.items():
            sel = cats == cat
            metrics["leakage_at_10"] = _r(leakage_rate(leak[sel], ret[sel]))
    out["by_category"] = by_category
    return out
