"""Score a Run against the queries of one split: point estimates, cluster-bootstrap intervals, calibration,
paired tests against a baseline, and a per-category breakdown, as a JSON-ready dict.

Conventions (in addition to those of :mod:`smartvector_bench.core.metrics`):

* Relevance is graded (qrels): a top-1 is **correct** when it has grade >= 1, i.e. it exists, is in force at
  the query's ``as_of`` and states the value that holds then (:mod:`smartvector_bench.core.labels`). ``stale`` /
  ``rumor``: the top-1 is in the query's stale / rumour set (labels; empty without labels). MRR@10, recall@5
  and nDCG@10 come from ``ir-measures`` (trec_eval) over the graded qrels, with the run's ranks as distinct
  scores (so trec_eval's tie rule never applies).
* Every query of the split is judged and counts in ``n_queries``. A query with no result is wrong, neither
  stale nor rumour, and scores 0 on the ranking metrics.
* A missing confidence (NaN, a Run's "no result") is 0.0 for ECE, Brier and AUROC: a calibrated abstention,
  not dropped. ``brier`` is the mean squared error of the top-1 confidence against correctness; ``auroc`` the
  area under the ROC of confidence as a predictor of a correct top-1 (ties count half; None with one class):
  ECE and Brier depend on the score's scale, AUROC only on its order (:mod:`smartvector_bench.core.metrics.calibration`).
* Intervals are 95% (``level``) percentile **cluster** bootstraps: families (the query's policy family, from
  the labels; each query is its own cluster without labels) are resampled with replacement, with
  ``n_boot`` resamples and the same ``seed`` for every metric and system, so intervals are paired.
* Paired tests against the baseline, on the same queries: an exact McNemar test (``mcnemar``; treats queries
  as independent) and a paired cluster sign-flip permutation test (``permutation``; families as the unit).
* Temporal leakage (``leakage_at_10``): the pooled share of returned top-10 chunks whose window does not
  contain the query's as_of; its interval is a cluster bootstrap of that ratio.
* Floats are rounded to 6 decimals, p-values to 6 significant digits; NaN becomes None.
"""

from __future__ import annotations

import math

import numpy as np

from smartvector_bench.core.dataset import Queries
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.metrics import (cluster_bootstrap_ci, cluster_bootstrap_mean_ci, design_effect, ece, in_sets, ir_metrics,
                      leakage_rate, leaked, mcnemar_exact, minimum_detectable_difference,
                      paired_cluster_permutation_test)
from smartvector_bench.core.metrics.calibration import auroc, brier
from smartvector_bench.core.run import Run

DECIMALS = 6
MRR_K = 10
RECALL_K = 5
IR_MEASURES = {"rr10": "RR@10", "r5": "R@5", "ndcg10": "nDCG@10"}


def _qrels(queries: Queries) -> dict[str, dict[str, int]]:
    return {qid: {str(int(c)): int(g) for c, g in zip(queries.relevant.row(i), queries.grades.row(i))}
            for i, qid in enumerate(queries.ids)}


def judge(run: Run, queries: Queries) -> dict[str, np.ndarray]:
    """Per-query outcomes aligned to ``queries``: bool ``correct``, ``stale``, ``rumor``; float ``rr10``, ``r5``,
    ``ndcg10``."""
    if run.ranked.shape[0] != len(queries):
        raise BenchError(f"run {run.system!r} has {run.ranked.shape[0]} rows but there are {len(queries)} queries")
    top1 = run.top1
    ranked = {qid: [str(int(c)) for c in run.ranked[i] if c >= 0] for i, qid in enumerate(queries.ids)}
    ir = ir_metrics(ranked, _qrels(queries), measures=tuple(IR_MEASURES.values()))
    out = {
        "correct": in_sets(top1, queries.relevant),
        "stale": in_sets(top1, queries.stale),
        "rumor": in_sets(top1, queries.rumor),
    }
    for key, measure in IR_MEASURES.items():
        out[key] = np.array([ir[measure][qid] for qid in queries.ids], dtype=np.float64)
    return out


def _r(x: float | None) -> float | None:
    if x is None or math.isnan(x):
        return None
    return round(float(x), DECIMALS)


def _p(x: float | None) -> float | None:
    """p-values keep 6 significant digits, so a tiny p never reads as 0."""
    if x is None or math.isnan(x):
        return None
    return float(f"{float(x):.6g}")


def _ci(bounds: tuple[float, float]) -> list[float | None]:
    return [_r(bounds[0]), _r(bounds[1])]


def _auroc(confidence: np.ndarray, correct: np.ndarray) -> float:
    """AUROC of confidence vs correctness; NaN (reported None) when only one class is present."""
    value = auroc(confidence, correct)
    return float("nan") if value is None else value


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
        "ndcg_at_10": _r(j["ndcg10"].mean()),
    }, bins


MEAN_METRICS = (("top1", "correct"), ("stale_rate", "stale"), ("rumor_rate", "rumor"), ("mrr_at_10", "rr10"),
                ("recall_at_5", "r5"), ("ndcg_at_10", "ndcg10"))


def evaluate_split(run: Run, queries: Queries, split: str, baseline_correct: np.ndarray | None = None,
                   n_boot: int = 1000, seed: int = 0, n_bins: int = 10,
                   windows: tuple[np.ndarray, np.ndarray] | None = None, n_permutations: int = 10000,
                   judged: dict[str, np.ndarray] | None = None) -> dict:
    """Metrics of ``run`` on the queries with ``queries.split == split`` (see the module docstring).

    ``baseline_correct`` is a bool array aligned to the full ``queries`` (all splits); when given, the
    result holds the paired tests (A = baseline, B = this run), else they are None. ``judged`` is
    ``judge(run, queries)`` when the caller already has it (it is the same for every split).
    Raises BenchError if the split has no queries or the arrays are misaligned.
    """
    rows = np.nonzero(np.asarray(queries.split) == split)[0]
    if len(rows) == 0:
        present = sorted({str(s) for s in queries.split})
        raise BenchError(f"split {split!r} has no queries (splits present: {', '.join(present) or 'none'})")
    full = judge(run, queries) if judged is None else judged
    j = {k: v[rows] for k, v in full.items()}
    clusters = np.asarray(queries.family, dtype=object)[rows]
    conf = np.asarray(run.confidence, dtype=np.float64)[rows]
    conf = np.where(np.isnan(conf), 0.0, conf)  # missing confidence = 0.0 (module docstring)

    point, bins = _point_metrics(j, conf, n_bins)
    boot = {"n_boot": n_boot, "seed": seed}
    out: dict = {"n_queries": point["n_queries"], "n_families": int(len(set(clusters.tolist())))}
    for name, key in MEAN_METRICS:
        out[name] = point[name]
        out[f"{name}_ci"] = _ci(cluster_bootstrap_mean_ci(j[key].astype(np.float64), clusters, **boot))
    out["ece"] = point["ece"]
    out["ece_ci"] = _ci(cluster_bootstrap_ci(lambda c, k: ece(c, k, n_bins)[0], (conf, j["correct"]), clusters,
                                             **boot))
    out["ece_bins"] = _round_bins(bins)
    out["brier"] = _r(brier(conf, j["correct"]))
    out["brier_ci"] = _ci(cluster_bootstrap_ci(brier, (conf, j["correct"]), clusters, **boot))
    out["auroc"] = _r(_auroc(conf, j["correct"]))
    out["auroc_ci"] = _ci(cluster_bootstrap_ci(_auroc, (conf, j["correct"]), clusters, **boot))
    out["mcnemar"] = out["mcnemar_p"] = out["permutation"] = out["permutation_p"] = None

    if baseline_correct is not None:
        base = np.asarray(baseline_correct, dtype=bool)
        if base.shape != (len(queries),):
            raise BenchError(f"baseline_correct must be aligned to all {len(queries)} queries; got shape {base.shape}")
        test = mcnemar_exact(base[rows], j["correct"])
        test["p_value"] = _p(test["p_value"])
        out["mcnemar"], out["mcnemar_p"] = test, test["p_value"]
        perm = paired_cluster_permutation_test(base[rows], j["correct"], clusters, n_resamples=n_permutations,
                                               seed=seed)
        perm = {"p_value": _p(perm["p_value"]), "statistic": _r(perm["statistic"]),
                "n_clusters": int(perm["n_clusters"]), "n": int(perm["n"]), "exact": bool(perm["exact"])}
        out["permutation"], out["permutation_p"] = perm, perm["p_value"]

    cats = np.asarray(queries.category, dtype=object)[rows]
    by_category = {}
    for cat in sorted({str(c) for c in cats}):
        sel = np.nonzero(cats == cat)[0]
        metrics, _ = _point_metrics({k: v[sel] for k, v in j.items()}, conf[sel], n_bins)
        metrics["top1_ci"] = _ci(cluster_bootstrap_mean_ci(j["correct"][sel].astype(np.float64), clusters[sel],
                                                           **boot))
        by_category[cat] = metrics
    if windows is not None:
        leak, ret = leaked(run.ranked[rows], windows[0], windows[1], queries.as_of[rows], k=MRR_K)
        out["leakage_at_10"] = _r(leakage_rate(leak, ret))
        out["leakage_at_10_ci"] = _ci(cluster_bootstrap_ci(leakage_rate, (leak, ret), clusters, **boot))
        for cat, metrics in by_category.items():
            sel = cats == cat
            metrics["leakage_at_10"] = _r(leakage_rate(leak[sel], ret[sel]))
    out["by_category"] = by_category
    return out


def power_analysis(correct: np.ndarray, queries: Queries, split: str = "test", alpha: float = 0.05,
                   power: float = 0.8, reference: str = "") -> dict:
    """Minimum detectable top-1 difference on ``split`` at the given power, for this dataset's clustering.

    The intra-family correlation of ``correct`` (a reference system's per-query top-1, aligned to all
    queries) gives the design effect and the effective number of independent queries; the MDE is the
    smallest increase over the reference's top-1 that a two-sided two-sample test of proportions with that
    many observations per arm detects (``metrics.minimum_detectable_difference``), and ``mde_top1_at_50``
    the same from a 50% baseline (the worst case). Unpaired, so conservative for paired comparisons.
    """
    rows = np.nonzero(np.asarray(queries.split) == split)[0]
    outcome = np.asarray(correct, dtype=np.float64)[rows]
    de = design_effect(outcome, np.asarray(queries.family, dtype=object)[rows])
    p0 = float(outcome.mean()) if len(outcome) else float("nan")
    return {
        "split": split, "reference_system": reference, "alpha": alpha, "power": power,
        "n_queries": int(de["n"]), "n_families": int(de["n_clusters"]), "icc": _r(de["icc"]),
        "mean_family_size": _r(de["mean_cluster_size"]), "design_effect": _r(de["design_effect"]),
        "n_effective": _r(de["n_effective"]), "reference_top1": _r(p0),
        "mde_top1": _r(minimum_detectable_difference(p0, de["n_effective"], alpha, power)),
        "mde_top1_at_50": _r(minimum_detectable_difference(0.5, de["n_effective"], alpha, power)),
    }
