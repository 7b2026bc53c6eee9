"""Sweeps: completeness checks and the pooled paired comparisons over seeds (permutation test, bootstrap)."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from smartvector_bench.core.evaluation.metrics.calibration import auroc, brier, ece, fit_calibration
from smartvector_bench.core.evaluation.metrics.clustered import cluster_bootstrap_ci, paired_cluster_permutation_test
from smartvector_bench.core.evaluation.verdicts.base import Boot, MIN_SEEDS, NotMeasured, Paired, QUERY_COLUMNS


def sweep_problem(summary: dict | None, preset: str = "sweep") -> str | None:
    """Why a sweep's per-query outcomes cannot be judged (None when its summary says it is complete)."""
    if summary is None:
        return f"missing {preset}/summary.json: completeness unknown"
    jobs = summary.get("jobs") or {}
    failed, missing = summary.get("failed") or [], summary.get("missing") or []
    n_failed, n_missing = max(len(failed), jobs.get("failed") or 0), max(len(missing), jobs.get("missing") or 0)
    if summary.get("all_complete") is not True or n_failed or n_missing:
        done = f"{jobs.get('complete', '?')} of {jobs.get('planned', '?')} jobs complete"
        return f"incomplete {preset} sweep: {done}, {n_failed} failed, {n_missing} missing"
    return None


# Outcomes a run cannot judge without its dataset's labels (collect.py leaves them empty): a test on one of them
# is "not measured" on the rows that lack it, never computed as if they were 0.
UNMEASURABLE = ("stale", "rumor")


def normalise_queries(df: pd.DataFrame) -> pd.DataFrame:
    """A queries.csv frame with the conventions applied: missing confidence -> 0.0, outcomes as floats (a
    ``stale`` / ``rumor`` cell left empty stays NaN: not measured, :data:`UNMEASURABLE`), ``query_id`` /
    ``family`` as strings (a query without a family is its own cluster), seeds as ints."""
    lacking = [c for c in QUERY_COLUMNS if c not in df.columns]
    if lacking:
        raise NotMeasured(f"queries.csv lacks column(s) {', '.join(lacking)}")
    out = df.copy()
    out["query_id"] = out["query_id"].astype(str)
    fam = out["family"]
    out["family"] = np.where(fam.isna(), "query:" + out["query_id"], fam.astype(str))
    seeds = pd.to_numeric(out["dataset_seed"], errors="coerce")
    if seeds.isna().any():
        raise NotMeasured("queries.csv has rows without a dataset_seed")
    out["dataset_seed"] = seeds.astype(np.int64)
    out["split"] = out["split"].astype(str)
    out["system"] = out["system"].astype(str)
    if "confidence" in out.columns:
        out["confidence"] = pd.to_numeric(out["confidence"], errors="coerce").fillna(0.0).astype(np.float64)
    for col in ("correct", "stale", "rumor"):
        if col in out.columns:
            out[col] = _zero_one(out[col], col, missing_ok=col in UNMEASURABLE)
    return out



_BOOL_TEXT = {"1": 1.0, "0": 0.0, "1.0": 1.0, "0.0": 0.0, "true": 1.0, "false": 0.0}


def _zero_one(col: pd.Series, name: str, missing_ok: bool = False) -> pd.Series:
    """A 0/1 outcome column as floats (bools, 0/1 numbers or their text); a missing outcome is an error unless
    ``missing_ok`` (then NaN: not measured)."""
    missing = col.isna() | (col.astype(str).str.strip() == "")
    if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
        vals = col.astype(np.float64)
    else:
        vals = col.astype(str).str.strip().str.lower().map(_BOOL_TEXT).astype(np.float64)
    if missing_ok:
        vals[missing] = np.nan
    bad = vals.isna() & ~missing if missing_ok else vals.isna()
    if bad.any() or not vals[~vals.isna()].isin((0.0, 1.0)).all():
        raise NotMeasured(f"queries.csv has missing or non-0/1 values in {name}")
    return vals


def _matches(col: pd.Series, value) -> pd.Series:
    if isinstance(value, str):
        return col.astype(str) == value
    if isinstance(value, float):
        return pd.Series(np.isclose(pd.to_numeric(col, errors="coerce"), value), index=col.index)
    return col == value


def _describe(system: str, split: str, filt: dict | None) -> str:
    where = ", ".join([f"split {split}"] + [f"{k}={v}" for k, v in (filt or {}).items()])
    return f"{system} ({where})"


def _side(df: pd.DataFrame, system: str, split: str, filt: dict | None) -> pd.DataFrame:
    mask = (df["system"] == system) & (df["split"] == split)
    for col, val in (filt or {}).items():
        if col not in df.columns:
            raise NotMeasured(f"queries.csv lacks the swept column {col}")
        mask &= _matches(df[col], val)
    rows = df[mask]
    if rows.empty:
        raise NotMeasured(f"no rows of {_describe(system, split, filt)}")
    return rows


def _groups(group) -> tuple[dict | None, dict | None, bool]:
    """``(filter_a, filter_b, across)``; ``across`` when the sides come from different jobs."""
    if isinstance(group, tuple):
        return group[0], group[1], True
    return group, group, False


def _joined(df: pd.DataFrame, system_a: str, system_b: str, columns: tuple[str, ...], split: str, group,
            min_seeds: int, prepare: Callable[[pd.DataFrame, str, dict | None], pd.DataFrame] | None = None
            ) -> pd.DataFrame:
    """Both sides' rows joined query by query (columns suffixed ``_a`` / ``_b``), with ``cluster``."""
    fa, fb, across = _groups(group)
    key = ["dataset_seed", "query_id"] if across else ["job", "query_id"]
    sides = []
    for system, filt in ((system_a, fa), (system_b, fb)):
        rows = _side(df, system, split, filt)
        if prepare is not None:
            rows = prepare(rows, system, filt)
        lacking = [c for c in columns if c not in rows.columns]
        if lacking:
            raise NotMeasured(f"queries.csv lacks column(s) {', '.join(lacking)}")
        for c in columns:
            if c in UNMEASURABLE and rows[c].isna().any():
                raise NotMeasured(f"{c} not measured for {int(rows[c].isna().sum())} rows of "
                                  f"{_describe(system, split, filt)} (empty in queries.csv: the dataset has no "
                                  f"{c} sets; see not_measured in the jobs' metrics.json)")
        keep = list(dict.fromkeys(key + ["dataset_seed", "family", *columns]))
        sides.append(rows[keep])
    try:
        j = sides[0].merge(sides[1], on=key, suffixes=("_a", "_b"), validate="one_to_one")
    except pd.errors.MergeError:
        raise NotMeasured(f"duplicate rows per {' x '.join(key)} in queries.csv") from None
    if "dataset_seed_a" in j.columns:
        j["dataset_seed"] = j["dataset_seed_a"]
    j["cluster"] = list(zip(j["dataset_seed"].astype(int), j["family_a"]))
    n_seeds = int(j["dataset_seed"].nunique())
    if n_seeds < min_seeds:
        raise NotMeasured(f"{n_seeds} seed(s) with both {_describe(system_a, split, fa)} and "
                          f"{_describe(system_b, split, fb)}, fewer than {min_seeds}")
    return j


def pooled_paired(queries_df: pd.DataFrame | None, system_a: str, system_b: str, metric: str, split: str = "test",
                  group=None, min_seeds: int = MIN_SEEDS, n_resamples: int = 10000, seed: int = 0) -> Paired:
    """Paired cluster sign-flip permutation test of ``metric`` (a 0/1 or float per-query column: ``correct``,
    ``stale``, ``rumor``) between side A and side B, pooled over every seed that has both.

    ``group`` selects the rows: None (all jobs; the sides are two systems of the same job, joined on
    ``(job, query_id)``), a dict ``{swept column: value}`` applied to both sides (e.g. one contradiction rate),
    or a pair of dicts ``(filter_a, filter_b)`` for sides from different jobs of the same dataset seed (e.g.
    ``weights=paper`` vs ``weights=no_confidence``), joined on ``(dataset_seed, query_id)``. Clusters are
    ``(dataset_seed, family)``. Returns :class:`Paired`; its ``reason`` says why nothing was measured (missing
    rows or columns, duplicates, fewer than ``min_seeds`` seeds with both sides).
    """
    if queries_df is None:
        return Paired(reason="missing queries.csv")
    try:
        df = normalise_queries(queries_df)
        j = _joined(df, system_a, system_b, (metric,), split, group, min_seeds)
    except NotMeasured as exc:
        return Paired(reason=str(exc))
    a, b = j[f"{metric}_a"].to_numpy(np.float64), j[f"{metric}_b"].to_numpy(np.float64)
    res = paired_cluster_permutation_test(a, b, list(j["cluster"]), n_resamples=n_resamples, seed=seed)
    return Paired(float(a.mean()), float(b.mean()), float(b.mean() - a.mean()), res["p_value"],
                  int(j["dataset_seed"].nunique()), res["n_clusters"], res["n"], res["exact"])


def _ece_stat(n_bins: int = 10) -> Callable:
    return lambda c, y: ece(c, y, n_bins)[0]


def _auroc_stat(c, y) -> float:
    v = auroc(c, y)
    return float("nan") if v is None else v


STATISTICS: dict[str, Callable] = {"ece": _ece_stat(), "brier": brier, "auroc": _auroc_stat}


def _platt_per_job(df: pd.DataFrame, method: str = "platt"):
    """A ``prepare`` hook: each job's test confidences through the map fitted on that job's dev rows of the
    same system (the map is fitted once per seed and held fixed)."""
    def prepare(rows: pd.DataFrame, system: str, filt: dict | None) -> pd.DataFrame:
        dev = _side(df, system, "dev", filt)
        out = rows.copy()
        for job, idx in rows.groupby("job").groups.items():
            d = dev[dev["job"] == job]
            if d.empty:
                raise NotMeasured(f"no dev rows of {system} in job {job} to fit the {method} map")
            cal = fit_calibration(method, d["confidence"].to_numpy(), d["correct"].to_numpy() > 0.5)
            out.loc[idx, "confidence"] = cal.apply(rows.loc[idx, "confidence"].to_numpy())
        return out
    return prepare


def pooled_bootstrap(queries_df: pd.DataFrame | None, system_a: str, system_b: str, statistic: str | Callable,
                     split: str = "test", group=None, min_seeds: int = MIN_SEEDS, calibrate: str | None = None,
                     n_boot: int = 1000, seed: int = 0) -> Boot:
    """Paired cluster bootstrap of ``statistic(conf_b, correct_b) - statistic(conf_a, correct_a)`` on the
    pooled rows of every seed with both sides (``statistic``: "ece", "brier", "auroc" or a callable).

    Rows are joined and clustered as in :func:`pooled_paired`; each resample draws ``(seed, family)`` clusters
    with replacement and takes both sides' rows of each (``cluster_bootstrap_ci`` on the four arrays), so the
    difference stays paired. ``calibrate="platt"`` (or another method of ``fit_calibration``) first maps each
    job's test confidences through the map fitted on the same job's dev rows (per seed), then pools. The 95%
    interval of the difference is ``ci``; ``Boot.lower`` / ``Boot.higher`` say whether it excludes 0.
    """
    if queries_df is None:
        return Boot(reason="missing queries.csv")
    fn = STATISTICS[statistic] if isinstance(statistic, str) else statistic
    try:
        df = normalise_queries(queries_df)
        prepare = _platt_per_job(df, calibrate) if calibrate else None
        j = _joined(df, system_a, system_b, ("confidence", "correct"), split, group, min_seeds, prepare)
        arrays = (j["confidence_a"].to_numpy(np.float64), j["correct_a"].to_numpy() > 0.5,
                  j["confidence_b"].to_numpy(np.float64), j["correct_b"].to_numpy() > 0.5)
        va, vb = float(fn(arrays[0], arrays[1])), float(fn(arrays[2], arrays[3]))
        lo, hi = cluster_bootstrap_ci(lambda ca, ya, cb, yb: fn(cb, yb) - fn(ca, ya), arrays, list(j["cluster"]),
                                      n_boot=n_boot, seed=seed)
    except NotMeasured as exc:
        return Boot(reason=str(exc))
    except ValueError as exc:  # e.g. confidences outside [0, 1]
        return Boot(reason=f"invalid confidences: {exc}")
    return Boot(va, vb, vb - va, (float(lo), float(hi)), int(j["dataset_seed"].nunique()),
                int(j["cluster"].nunique()), int(len(j)))


def _frame_problem(df: pd.DataFrame | None, summary: dict | None, preset: str) -> str | None:
    if df is None:
        return f"missing {preset}/queries.csv"
    return sweep_problem(summary, preset)


def _perm_test(r: Paired, what: str, preset: str, min_seeds: int, n_resamples: int) -> str:
    if r.reason is not None or not r.n_clusters:
        return (f"paired cluster sign-flip permutation of per-query {what} over (seed, family) test clusters "
                f"pooled across >= {min_seeds} seeds of {preset}/queries.csv")
    how = "exact" if r.exact else f"{n_resamples} random sign patterns"
    return (f"paired cluster sign-flip permutation of per-query {what} over {r.n_clusters} (seed, family) test "
            f"clusters pooled across {r.n_seeds} seeds ({r.n} query pairs; {how}; two-sided)")


def _boot_test(what: str, n_boot: int, min_seeds: int, seeds: int | None = None) -> str:
    pooled = f"{seeds} seeds" if seeds else f">= {min_seeds} seeds"
    return (f"paired cluster bootstrap ({n_boot} resamples of (seed, family) test clusters, pooled across "
            f"{pooled}) of the difference in {what}")
