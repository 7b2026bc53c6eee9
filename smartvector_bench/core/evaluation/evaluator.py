"""Score a Run against the queries of one split: point estimates, cluster-bootstrap intervals, calibration,
paired tests against a baseline, and a per-category breakdown, as a JSON-ready dict.

Conventions (in addition to those of :mod:`smartvector_bench.core.evaluation.metrics`):

* Relevance is graded (qrels): a top-1 is **correct** when it has grade >= 1, i.e. it exists, is in force at
  the query's ``as_of`` and states the value that holds then (:mod:`smartvector_bench.core.evaluation.judgments`).
  ``stale`` / ``rumor``: the top-1 is in the query's stale / rumor set (labels; empty without labels). MRR@10, recall@5
  and nDCG@10 come from ``ir-measures`` (trec_eval) over the graded qrels, with the run's ranks as distinct
  scores (so trec_eval's tie rule never applies).
* Every query of the split is judged and counts in ``n_queries``. A query with no result is wrong, neither
  stale nor rumor, and scores 0 on the ranking metrics.
* A missing confidence (NaN, a Run's "no result") is 0.0 for ECE, Brier and AUROC: a calibrated abstention,
  not dropped. ``brier`` is the mean squared error of the top-1 confidence against correctness; ``auroc`` the
  area under the ROC of confidence as a predictor of a correct top-1 (ties count half; None with one class):
  ECE and Brier depend on the score's scale, AUROC only on its order
  (:mod:`smartvector_bench.core.evaluation.metrics.calibration`).
* Intervals are 95% (``level``) percentile **cluster** bootstraps: families (the query's policy family, from
  the labels; each query is its own cluster without labels) are resampled with replacement, with
  ``n_boot`` resamples and the same ``seed`` for every metric and system, so intervals are paired.
* Paired tests against the baseline, on the same queries: an exact McNemar test (``mcnemar``; treats queries
  as independent) and a paired cluster sign-flip permutation test (``permutation``; families as the unit).
* Temporal leakage (``leakage_at_10``): the pooled share of returned top-10 chunks whose window does not
  contain the query's as_of; its interval is a cluster bootstrap of that ratio.
* Floats are rounded to 6 decimals, p-values to 6 significant digits; NaN becomes None.
* A metric the dataset cannot measure (``unmeasured``: :mod:`smartvector_bench.core.evaluation.measured`) is None, its
  interval ``[None, None]`` and its by-category figures None, and the split holds ``not_measured``
  ``{metric: reason}``; without it nothing changes.

Set-valued relevance (:func:`judge_sets`): a returned hit may stand for a *set* of corpus rows (a LiveVectorLake
row maps to every corpus row of the same document and text whose window contains the query's as_of: possibly
several, possibly none). A hit is relevant (stale, rumor) when any row it stands for is in the query's relevant
(stale, rumor) set; ``rank`` is the rank of the first relevant hit among the first ``k`` (0 when none), ``rr``
its reciprocal (MRR@k is the mean), ``found`` whether there is one (recall@k of experiment=lvl_eval: a relevant
hit within k, not the share of relevant rows); ``n_unmapped`` counts the hits that stand for no row. Both entry
points reduce to one core over (entry, rank, corpus row) pairs: a Run gives one pair per returned row (singleton
sets), so :func:`judge`'s ``correct`` / ``stale`` / ``rumor`` are :func:`judge_sets`'s on singletons, while its
ranking metrics stay trec_eval's over the graded qrels. :func:`rank_summary` reports top-1 and MRR@k with
intervals and recall@k, by the cluster bootstrap above or, with ``clusters=None``, the plain per-query bootstrap
(``metrics.bootstrap_mean_ci``; each query its own cluster).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

import numpy as np

from smartvector_bench.core.csr import Ragged
from smartvector_bench.core.dataset import Queries
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.measured import ICC, KEY as NOT_MEASURED
from smartvector_bench.core.evaluation.metrics import (
    bootstrap_mean_ci, cluster_bootstrap_ci, cluster_bootstrap_mean_ci, design_effect, ece, ir_metrics, leakage_rate,
    leaked, mcnemar_exact, minimum_detectable_difference, paired_cluster_permutation_test,
)
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.evaluation.metrics.calibration import auroc, brier
from smartvector_bench.core.run import HIT_LABELS, Run

DECIMALS = 6
MRR_K = 10
RECALL_K = 5
IR_MEASURES = {"rr10": "RR@10", "r5": "R@5", "ndcg10": "nDCG@10"}


def _qrels(queries: Queries) -> dict[str, dict[str, int]]:
    return {qid: {str(int(c)): int(g) for c, g in zip(queries.relevant.row(i), queries.grades.row(i))}
            for i, qid in enumerate(queries.ids)}


def _member(sets: Ragged, qrow: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Per pair p: ``row[p]`` is in ``sets.row(qrow[p])``. A ``-1`` in a set never matches (no result is no hit)."""
    keep = sets.indices >= 0
    if not len(row) or not keep.any():
        return np.zeros(len(row), dtype=bool)
    base = int(max(row.max(), sets.indices[keep].max())) + 1
    return np.isin(qrow * base + row, sets.row_ids()[keep] * base + sets.indices[keep])


def _judge_pairs(owner: np.ndarray, qrow: np.ndarray, rank: np.ndarray, row: np.ndarray, queries: Queries,
                 n: int) -> dict[str, np.ndarray]:
    """The core of :func:`judge` and :func:`judge_sets`: pair p says the hit at 1-based ``rank[p]`` of entry
    ``owner[p]`` (0 .. n-1; judged against query ``qrow[p]``) stands for corpus row ``row[p]``. Returns per entry
    ``correct``, ``stale``, ``rumor`` (of the rank-1 hit) and ``rank`` (first relevant hit, 0 when none)."""
    rel = _member(queries.relevant, qrow, row)
    best = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, owner[rel], rank[rel])
    first = np.where(best == np.iinfo(np.int64).max, 0, best)
    top = rank == 1
    out = {"correct": first == 1}
    for key, sets in (("stale", queries.stale), ("rumor", queries.rumor)):
        flag = np.zeros(n, dtype=bool)
        flag[owner[top & _member(sets, qrow, row)]] = True
        out[key] = flag
    out["rank"] = first
    return out


def judge(run: Run, queries: Queries) -> dict[str, np.ndarray]:
    """Per-query outcomes aligned to ``queries``: bool ``correct``, ``stale``, ``rumor``; float ``rr10``, ``r5``,
    ``ndcg10``."""
    if run.ranked.shape[0] != len(queries):
        raise BenchError(f"run {run.system!r} has {run.ranked.shape[0]} rows but there are {len(queries)} queries")
    owner, col = np.nonzero(np.asarray(run.ranked) >= 0)  # one pair per returned row: singleton sets
    core = _judge_pairs(owner, owner, col + 1, np.asarray(run.ranked, dtype=np.int64)[owner, col], queries,
                        len(queries))
    ranked = {qid: [str(int(c)) for c in run.ranked[i] if c >= 0] for i, qid in enumerate(queries.ids)}
    ir = ir_metrics(ranked, _qrels(queries), measures=tuple(IR_MEASURES.values()))
    out = {key: core[key] for key in ("correct", "stale", "rumor")}
    for key, measure in IR_MEASURES.items():
        out[key] = np.array([ir[measure][qid] for qid in queries.ids], dtype=np.float64)
    return out


def judge_sets(hits: Sequence[Sequence[Collection[int]]], queries: Queries, k: int,
               qidx: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Set-valued judging (module docstring): ``hits[i]`` lists entry i's returned hits best first, each the
    corpus rows it stands for; entry i is judged against query ``qidx[i]`` (default: entry i is query i) on its
    first ``k`` hits. Returns per entry bool ``correct``, ``stale``, ``rumor``, ``found``; int ``rank`` (0 = no
    relevant hit), ``n_hits``, ``n_unmapped``; float ``rr``."""
    qidx = np.arange(len(queries), dtype=np.int64) if qidx is None else np.asarray(qidx, dtype=np.int64)
    if len(hits) != len(qidx):
        raise BenchError(f"judge_sets got {len(hits)} hit lists for {len(qidx)} queries")
    n = len(qidx)
    owner: list[int] = []
    rank: list[int] = []
    row: list[int] = []
    n_hits = np.zeros(n, dtype=np.int64)
    n_unmapped = np.zeros(n, dtype=np.int64)
    for i, entry in enumerate(hits):
        entry = list(entry)[:k]
        n_hits[i] = len(entry)
        for r, rows in enumerate(entry, 1):
            rows = [int(x) for x in rows]
            n_unmapped[i] += not rows
            owner += [i] * len(rows)
            rank += [r] * len(rows)
            row += rows
    owner_a = np.asarray(owner, dtype=np.int64)
    out = _judge_pairs(owner_a, qidx[owner_a], np.asarray(rank, dtype=np.int64), np.asarray(row, dtype=np.int64),
                       queries, n)
    first = out["rank"]
    out["rr"] = np.where(first > 0, 1.0 / np.maximum(first, 1), 0.0)
    out["found"] = first > 0
    out["n_hits"], out["n_unmapped"] = n_hits, n_unmapped
    return out


def hit_labels(run: Run, queries: Queries, k: int = MRR_K) -> list[list[str]]:
    """Per query, one label per returned hit of the first ``k`` (padding skipped, order kept): ``correct``
    (relevant, grade >= 1), ``stale``, ``rumor`` or ``other``. Each hit is judged by :func:`judge_sets` as a
    one-hit entry of its query, so a rank-1 label is exactly :func:`judge`'s ``correct`` / ``stale`` / ``rumor``."""
    ranked = np.asarray(run.ranked, dtype=np.int64)[:, :k]
    owner, col = np.nonzero(ranked >= 0)
    j = judge_sets([[[int(ranked[q, c])]] for q, c in zip(owner, col)], queries, 1, qidx=owner)
    label = np.select([j["correct"], j["stale"], j["rumor"]], HIT_LABELS[:3], HIT_LABELS[3])
    out: list[list[str]] = [[] for _ in range(len(ranked))]
    for q, lab in zip(owner, label):  # np.nonzero walks rows in order, columns ascending: rank order
        out[q].append(str(lab))
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
        M.N_QUERIES: int(len(conf)),
        M.TOP1: _r(j["correct"].mean()),
        M.STALE_RATE: _r(j["stale"].mean()),
        M.RUMOR_RATE: _r(j["rumor"].mean()),
        M.ECE: _r(value),
        M.MRR_AT_10: _r(j["rr10"].mean()),
        M.RECALL_AT_5: _r(j["r5"].mean()),
        M.NDCG_AT_10: _r(j["ndcg10"].mean()),
    }, bins


MEAN_METRICS = ((M.TOP1, "correct"), (M.STALE_RATE, "stale"), (M.RUMOR_RATE, "rumor"), (M.MRR_AT_10, "rr10"),
                (M.RECALL_AT_5, "r5"), (M.NDCG_AT_10, "ndcg10"))


def _mean_ci(values: np.ndarray, clusters, n_boot: int, seed: int) -> list[float | None]:
    """Rounded bootstrap interval of the mean: over ``clusters``, or per query when ``clusters`` is None."""
    values = np.asarray(values, dtype=np.float64)
    if clusters is None:
        return _ci(bootstrap_mean_ci(values, n_boot=n_boot, seed=seed))
    return _ci(cluster_bootstrap_mean_ci(values, clusters, n_boot=n_boot, seed=seed))


def rank_summary(judged: dict[str, np.ndarray], k: int, n_boot: int = 1000, seed: int = 0, select=None,
                 clusters=None) -> dict:
    """Top-1 and MRR@k with 95% bootstrap intervals, and recall@k, over :func:`judge_sets`'s outcomes (``k`` is
    the one they were judged at), on the entries ``select`` (a mask or indices; default all). ``clusters``: one
    label per selected entry, or None for the plain per-query bootstrap. ``{"n": 0}`` when nothing is selected."""
    j = judged if select is None else {key: v[select] for key, v in judged.items()}
    n = len(j["correct"])
    if not n:
        return {"n": 0}
    boot = {"clusters": clusters, "n_boot": n_boot, "seed": seed}
    return {"n": n, M.TOP1: _r(j["correct"].mean()), M.ci(M.TOP1): _mean_ci(j["correct"], **boot),
            "correct": int(j["correct"].sum()), M.mrr_at(k): _r(j["rr"].mean()),
            M.ci(M.mrr_at(k)): _mean_ci(j["rr"], **boot), M.recall_at(k): _r(j["found"].mean())}


def evaluate_split(run: Run, queries: Queries, split: str, baseline_correct: np.ndarray | None = None,
                   n_boot: int = 1000, seed: int = 0, n_bins: int = 10,
                   windows: tuple[np.ndarray, np.ndarray] | None = None, n_permutations: int = 10000,
                   judged: dict[str, np.ndarray] | None = None, unmeasured: dict[str, str] | None = None) -> dict:
    """Metrics of ``run`` on the queries with ``queries.split == split`` (see the module docstring).

    ``baseline_correct`` is a bool array aligned to the full ``queries`` (all splits); when given, the
    result holds the paired tests (A = baseline, B = this run), else they are None. ``judged`` is
    ``judge(run, queries)`` when the caller already has it (it is the same for every split). ``unmeasured``:
    ``{metric: reason}`` of the metrics the dataset cannot measure (``measured.unmeasured``), stored as None.
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
    out: dict = {M.N_QUERIES: point[M.N_QUERIES], M.N_FAMILIES: int(len(set(clusters.tolist())))}
    skip = dict(unmeasured or {})
    for name, key in MEAN_METRICS:
        out[name] = None if name in skip else point[name]
        out[M.ci(name)] = [None, None] if name in skip else _mean_ci(j[key], clusters, **boot)
    out[M.ECE] = point[M.ECE]
    out[M.ci(M.ECE)] = _ci(cluster_bootstrap_ci(lambda c, k: ece(c, k, n_bins)[0], (conf, j["correct"]), clusters,
                                                **boot))
    out["ece_bins"] = _round_bins(bins)
    out[M.BRIER] = _r(brier(conf, j["correct"]))
    out[M.ci(M.BRIER)] = _ci(cluster_bootstrap_ci(brier, (conf, j["correct"]), clusters, **boot))
    out[M.AUROC] = _r(_auroc(conf, j["correct"]))
    out[M.ci(M.AUROC)] = _ci(cluster_bootstrap_ci(_auroc, (conf, j["correct"]), clusters, **boot))
    out["mcnemar"] = out[M.MCNEMAR_P] = out["permutation"] = out[M.PERMUTATION_P] = None

    if baseline_correct is not None:
        base = np.asarray(baseline_correct, dtype=bool)
        if base.shape != (len(queries),):
            raise BenchError(f"baseline_correct must be aligned to all {len(queries)} queries; got shape {base.shape}")
        test = mcnemar_exact(base[rows], j["correct"])
        test["p_value"] = _p(test["p_value"])
        out["mcnemar"], out[M.MCNEMAR_P] = test, test["p_value"]
        perm = paired_cluster_permutation_test(base[rows], j["correct"], clusters, n_resamples=n_permutations,
                                               seed=seed)
        perm = {"p_value": _p(perm["p_value"]), "statistic": _r(perm["statistic"]),
                "n_clusters": int(perm["n_clusters"]), "n": int(perm["n"]), "exact": bool(perm["exact"])}
        out["permutation"], out[M.PERMUTATION_P] = perm, perm["p_value"]

    cats = np.asarray(queries.category, dtype=object)[rows]
    by_category = {}
    for cat in sorted({str(c) for c in cats}):
        sel = np.nonzero(cats == cat)[0]
        metrics, _ = _point_metrics({k: v[sel] for k, v in j.items()}, conf[sel], n_bins)
        metrics[M.ci(M.TOP1)] = _mean_ci(j["correct"][sel], clusters[sel], **boot)
        metrics.update({name: None for name in skip if name in metrics})
        by_category[cat] = metrics
    if windows is not None and M.LEAKAGE_AT_10 in skip:
        out[M.LEAKAGE_AT_10], out[M.ci(M.LEAKAGE_AT_10)] = None, [None, None]
        for metrics in by_category.values():
            metrics[M.LEAKAGE_AT_10] = None
    elif windows is not None:
        leak, ret = leaked(run.ranked[rows], windows[0], windows[1], queries.as_of[rows], k=MRR_K)
        out[M.LEAKAGE_AT_10] = _r(leakage_rate(leak, ret))
        out[M.ci(M.LEAKAGE_AT_10)] = _ci(cluster_bootstrap_ci(leakage_rate, (leak, ret), clusters, **boot))
        for cat, metrics in by_category.items():
            sel = cats == cat
            metrics[M.LEAKAGE_AT_10] = _r(leakage_rate(leak[sel], ret[sel]))
    out["by_category"] = by_category
    if skip:
        out[NOT_MEASURED] = skip
    return out


def power_analysis(correct: np.ndarray, queries: Queries, split: str = "test", alpha: float = 0.05,
                   power: float = 0.8, reference: str = "") -> dict:
    """Minimum detectable top-1 difference on ``split`` at the given power, for this dataset's clustering.

    The intra-family correlation of ``correct`` (a reference system's per-query top-1, aligned to all
    queries) gives the design effect and the effective number of independent queries; the MDE is the
    smallest increase over the reference's top-1 that a two-sided two-sample test of proportions with that
    many observations per arm detects (``metrics.minimum_detectable_difference``), and ``mde_top1_at_50``
    the same from a 50% baseline (the worst case). Unpaired, so conservative for paired comparisons. When no two
    queries share a family the correlation is undefined: ``icc`` is None with its reason in ``not_measured`` (the
    design effect of clusters of one is 1 whatever it is, so the MDE stands, per query).
    """
    rows = np.nonzero(np.asarray(queries.split) == split)[0]
    outcome = np.asarray(correct, dtype=np.float64)[rows]
    de = design_effect(outcome, np.asarray(queries.family, dtype=object)[rows])
    p0 = float(outcome.mean()) if len(outcome) else float("nan")
    singletons = 0 < de["n"] == de["n_clusters"]  # design_effect reports 0 for an undefined icc
    out = {
        "split": split, "reference_system": reference, "alpha": alpha, "power": power,
        M.N_QUERIES: int(de["n"]), M.N_FAMILIES: int(de["n_clusters"]), ICC: None if singletons else _r(de["icc"]),
        "mean_family_size": _r(de["mean_cluster_size"]), "design_effect": _r(de["design_effect"]),
        "n_effective": _r(de["n_effective"]), "reference_top1": _r(p0),
        "mde_top1": _r(minimum_detectable_difference(p0, de["n_effective"], alpha, power)),
        "mde_top1_at_50": _r(minimum_detectable_difference(0.5, de["n_effective"], alpha, power)),
    }
    if singletons:
        out[NOT_MEASURED] = {ICC: "no two queries share a family: the intra-family correlation is undefined"}
    return out
