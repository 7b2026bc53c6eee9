"""Verdict rules of the claims table, as pure functions over stored results (nothing here reads a file).

Each rule takes what it judges (a sweep's per-query outcomes as a DataFrame of ``results/<preset>/queries.csv``
and its ``summary.json`` as a dict, or a results JSON as a dict; ``None`` when the file is missing) and returns
a :class:`Verdict`: the verdict, our figure, the statistical test and the threshold it used, the p-value
the verdict rests on (None for interval- or count-based rules) and the rule text.

Verdicts are "holds", "partly", "does not hold" or "not measured (<reason>)". A rule never says "holds" on
evidence it does not have: a missing file or system, fewer than ``min_seeds`` seeds with both sides, or a sweep
whose summary is not complete (``all_complete`` false, failed or missing jobs) gives "not measured".

Pooled paired comparisons (:func:`pooled_paired`) join two sides' per-query rows, cluster them by
``(dataset_seed, family)`` (queries of one policy family share their failure modes; different seeds are
different datasets) and run :func:`~smartvector_bench.core.metrics.clustered.paired_cluster_permutation_test`.
Non-additive metrics (ECE, Brier, AUROC, ECE after a Platt map fitted per seed on dev) are compared with a
paired cluster bootstrap of the difference (:func:`pooled_bootstrap`); the difference counts as evidence when
its 95% interval excludes 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from smartvector_bench.core.metrics.calibration import auroc, brier, ece, fit_calibration
from smartvector_bench.core.metrics.clustered import cluster_bootstrap_ci, paired_cluster_permutation_test

ALPHA = 0.05
MIN_SEEDS = 5
OUTCOMES = ("holds", "partly", "does not hold", "not measured")
SIGNALS = ("semantic", "temporal", "confidence", "relational")
QUERY_COLUMNS = ("job", "dataset_seed", "system", "query_id", "split", "family")


@dataclass(frozen=True)
class Verdict:
    """One claim's verdict. ``verdict`` is one of :data:`OUTCOMES` ("not measured" with its reason in
    parentheses); ``test`` names the statistical test, ``threshold`` the threshold(s) applied to it,
    ``p_value`` the p the verdict rests on (None when the rule uses an interval or exact counts) and
    ``detail`` the rule text (which result gives which verdict)."""
    verdict: str
    figure: str
    test: str
    threshold: str
    p_value: float | None = None
    detail: str = ""

    @property
    def outcome(self) -> str:
        """The verdict without its reason: one of :data:`OUTCOMES`."""
        return self.verdict.split(" (", 1)[0]

    def __post_init__(self):
        if self.outcome not in OUTCOMES:
            raise ValueError(f"verdict must be one of {OUTCOMES}, got {self.verdict!r}")


class NotMeasured(Exception):
    """Raised inside the rules when a figure cannot be computed; its message is the reason."""


@dataclass(frozen=True)
class Paired:
    """Result of :func:`pooled_paired` (``reason`` set, everything else None/0, when not measurable).

    ``diff = mean_b - mean_a`` (the permutation statistic: positive = side B higher)."""
    mean_a: float | None = None
    mean_b: float | None = None
    diff: float | None = None
    p_value: float | None = None
    n_seeds: int = 0
    n_clusters: int = 0
    n: int = 0
    exact: bool = False
    reason: str | None = None


@dataclass(frozen=True)
class Boot:
    """Result of :func:`pooled_bootstrap`: the statistic of both sides on the pooled rows, ``diff = b - a``
    and its 95% paired cluster-bootstrap interval ``ci`` (``reason`` set when not measurable)."""
    value_a: float | None = None
    value_b: float | None = None
    diff: float | None = None
    ci: tuple[float, float] | None = None
    n_seeds: int = 0
    n_clusters: int = 0
    n: int = 0
    reason: str | None = None

    @property
    def lower(self) -> bool:
        """B lower than A with evidence: the interval of the difference lies below 0."""
        return self.ci is not None and bool(np.isfinite(self.ci[1])) and self.ci[1] < 0

    @property
    def higher(self) -> bool:
        """B higher than A with evidence: the interval of the difference lies above 0."""
        return self.ci is not None and bool(np.isfinite(self.ci[0])) and self.ci[0] > 0


# -- formatting ------------------------------------------------------------------------------------------------

def _pct(x, nd: int = 1) -> str:
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{100 * x:.{nd}f}%"


def _ci(ci) -> str:
    return "" if not ci or ci[0] is None else f" [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def format_p(p) -> str:
    """A p-value for the table: "-" when the rule has none, "< 1e-4" below that, else 2 significant digits."""
    if p is None:
        return "-"
    return "< 1e-4" if p < 1e-4 else f"{p:.2g}"


def _f3(x) -> str:
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.3f}"


def _dci(ci, scale: float = 1.0, nd: int = 3) -> str:
    if ci is None or not np.all(np.isfinite(ci)):
        return " [CI undefined]"
    return f" [{scale * ci[0]:+.{nd}f}, {scale * ci[1]:+.{nd}f}]"


def _ms(x) -> str:
    return f"{x:.0f} ms" if x >= 10 else f"{x:.2f} ms"


def not_measured(reason: str, figure: str, test: str, threshold: str, detail: str) -> Verdict:
    return Verdict(f"not measured ({reason})", figure, test, threshold, None, detail)


# -- multiple testing ------------------------------------------------------------------------------------------

def holm(pvalues) -> list[float]:
    """Holm (1979) step-down adjusted p-values (family-wise error control), in the input order."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    adj = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return [float(x) for x in out]


# -- sweeps: completeness and pooled comparisons ---------------------------------------------------------------

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


def normalise_queries(df: pd.DataFrame) -> pd.DataFrame:
    """A queries.csv frame with the conventions applied: missing confidence -> 0.0, outcomes as floats,
    ``query_id`` / ``family`` as strings (a query without a family is its own cluster), seeds as ints."""
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
            out[col] = _zero_one(out[col], col)
    return out


_BOOL_TEXT = {"1": 1.0, "0": 0.0, "1.0": 1.0, "0.0": 0.0, "true": 1.0, "false": 0.0}


def _zero_one(col: pd.Series, name: str) -> pd.Series:
    """A 0/1 outcome column as floats (bools, 0/1 numbers or their text); a missing outcome is an error."""
    if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
        vals = col.astype(np.float64)
    else:
        vals = col.astype(str).str.strip().str.lower().map(_BOOL_TEXT).astype(np.float64)
    if vals.isna().any() or not vals.isin((0.0, 1.0)).all():
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


# -- 1-3: the main table (seeds sweep, seed-42 main runs quoted) -----------------------------------------------

TOP1_RULE = ("holds: pooled test top-1 of smartvector >= 1.5x plain_cosine and higher with paired p < 0.05; "
             "partly: higher with p < 0.05 but < 1.5x; does not hold: otherwise; not measured: < 5 seeds with "
             "both systems or an incomplete seeds sweep")


def _main_quote(m: dict | None, label: str) -> str:
    if not m or "smartvector" not in m.get("systems", {}) or "plain_cosine" not in m.get("systems", {}):
        return ""
    pc, sv = m["systems"]["plain_cosine"]["test"], m["systems"]["smartvector"]["test"]
    return (f"; {label} ({pc.get('n_queries', '?')} test queries): {_pct(pc['top1'])}{_ci(pc.get('top1_ci'))} -> "
            f"{_pct(sv['top1'])}{_ci(sv.get('top1_ci'))} (McNemar p {format_p(sv.get('mcnemar_p'))}, cluster "
            f"permutation p {format_p(sv.get('permutation_p'))})")


def top1_doubles(seeds_df: pd.DataFrame | None, seeds_summary: dict | None, main: dict | None = None,
                 main_large: dict | None = None, *, min_seeds: int = MIN_SEEDS, n_resamples: int = 10000,
                 seed: int = 0) -> Verdict:
    """Claim 1: top-1 doubles over plain cosine (seeds sweep, smartvector vs plain_cosine, test split)."""
    threshold = "ratio >= 1.5 and p < 0.05 (holds); p < 0.05 (partly)"
    quote = _main_quote(main, "seed 42") + _main_quote(main_large, "large profile, seed 42")
    if main:
        ref = main["systems"].get("smartvector_ref", {}).get("test")
        if ref:
            quote += f"; the paper's own package {_pct(ref['top1'])}"
        vc = main["systems"].get("valid_cosine", {}).get("test")
        if vc:
            quote += f"; valid_cosine (validity window + cosine) {_pct(vc['top1'])}"
    else:
        quote += "; main/metrics.json missing"
    problem = _frame_problem(seeds_df, seeds_summary, "seeds")
    r = Paired(reason=problem) if problem else pooled_paired(seeds_df, "plain_cosine", "smartvector", "correct",
                                                             min_seeds=min_seeds, n_resamples=n_resamples, seed=seed)
    test = _perm_test(r, "top-1", "seeds", min_seeds, n_resamples)
    if r.reason:
        return not_measured(r.reason, "pooled over seeds: not measured" + quote, test, threshold, TOP1_RULE)
    ratio = r.mean_b / r.mean_a if r.mean_a else float("inf")
    significant_higher = r.diff > 0 and r.p_value < ALPHA
    verdict = ("holds" if significant_higher and ratio >= 1.5 else "partly" if significant_higher
               else "does not hold")
    figure = (f"{r.n_seeds} seeds pooled ({r.n} test queries): {_pct(r.mean_a)} -> {_pct(r.mean_b)} "
              f"(x{ratio:.2f}, {100 * r.diff:+.1f} pts)" + quote)
    return Verdict(verdict, figure, test, threshold, r.p_value, TOP1_RULE)


STALE_RULE = ("judged on smartvector_soft (status filter off, signals on) vs plain_cosine: holds: lower pooled "
              "stale rate with paired p < 0.05; partly: lower, p >= 0.05; does not hold: not lower; the hard "
              "smartvector removes superseded vectors by status, so its rate is shown but not judged")


def stale_rate_falls(seeds_df: pd.DataFrame | None, seeds_summary: dict | None, *, min_seeds: int = MIN_SEEDS,
                     n_resamples: int = 10000, seed: int = 0) -> Verdict:
    """Claim 2: the stale-answer rate falls (smartvector_soft vs plain_cosine, pooled over seeds)."""
    threshold = "lower and p < 0.05 (holds); lower (partly)"
    problem = _frame_problem(seeds_df, seeds_summary, "seeds")
    r = Paired(reason=problem) if problem else pooled_paired(seeds_df, "plain_cosine", "smartvector_soft", "stale",
                                                             min_seeds=min_seeds, n_resamples=n_resamples, seed=seed)
    test = _perm_test(r, "stale answers", "seeds", min_seeds, n_resamples)
    if r.reason:
        return not_measured(r.reason, "-", test, threshold, STALE_RULE)
    figure = (f"{r.n_seeds} seeds pooled: plain_cosine {_pct(r.mean_a)} -> smartvector_soft {_pct(r.mean_b)} "
              f"({100 * r.diff:+.1f} pts)")
    hard = pooled_paired(seeds_df, "plain_cosine", "smartvector", "stale", min_seeds=min_seeds, n_resamples=1)
    if hard.reason is None:
        figure += f"; hard smartvector {_pct(hard.mean_b)}"
        if hard.mean_b == 0 and r.mean_b != 0:
            figure += " (0 by construction (status filter))"
        elif hard.mean_b == r.mean_b:
            figure += " (the same with the filter off: the signals, not the status filter, keep superseded versions out)"
        else:
            figure += " (superseded versions removed by the status filter; what remains are lagging sources)"
    ref = pooled_paired(seeds_df, "plain_cosine", "smartvector_ref_soft", "stale", min_seeds=min_seeds,
                        n_resamples=1)
    if ref.reason is None:
        figure += f"; the paper's package without its status filter (smartvector_ref_soft) {_pct(ref.mean_b)}"
    lower = r.diff < 0
    verdict = "holds" if lower and r.p_value < ALPHA else "partly" if lower else "does not hold"
    return Verdict(verdict, figure, test, threshold, r.p_value, STALE_RULE)


ECE_RULE = ("(a) raw ECE of smartvector lower than plain_cosine with evidence; (b) ECE after a Platt map fitted "
            "per seed on dev (applied to test) lower with evidence, or AUROC higher with evidence; evidence = "
            "the 95% CI of the paired difference excludes 0; holds: (a) and (b); partly: exactly one; does not "
            "hold: neither (ECE alone rewards the score's scale; AUROC and calibrated ECE do not)")


def ece_falls(seeds_df: pd.DataFrame | None, seeds_summary: dict | None, *, min_seeds: int = MIN_SEEDS,
              n_boot: int = 1000, seed: int = 0) -> Verdict:
    """Claim 3: calibration error falls, judged beyond the score's scale (raw ECE and calibrated ECE / AUROC)."""
    threshold = "95% CI of each difference excludes 0; (a) and (b) (holds); one of them (partly)"
    problem = _frame_problem(seeds_df, seeds_summary, "seeds")
    if problem:
        return not_measured(problem, "-", _boot_test("ECE, Platt-calibrated ECE, AUROC", n_boot, min_seeds),
                            threshold, ECE_RULE)
    args = dict(min_seeds=min_seeds, n_boot=n_boot, seed=seed)
    raw = pooled_bootstrap(seeds_df, "plain_cosine", "smartvector", "ece", **args)
    cal = pooled_bootstrap(seeds_df, "plain_cosine", "smartvector", "ece", calibrate="platt", **args)
    auc = pooled_bootstrap(seeds_df, "plain_cosine", "smartvector", "auroc", **args)
    bri = pooled_bootstrap(seeds_df, "plain_cosine", "smartvector", "brier", **args)
    reason = raw.reason or cal.reason or auc.reason
    test = _boot_test("ECE (10 bins), Platt-calibrated ECE (map fitted per seed on dev), AUROC and Brier", n_boot,
                      min_seeds, None if reason else raw.n_seeds)
    if reason:
        return not_measured(reason, "-", test, threshold, ECE_RULE)
    a, b = raw.lower, cal.lower or auc.higher
    verdict = "holds" if a and b else "partly" if a or b else "does not hold"
    figure = (f"{raw.n_seeds} seeds pooled, plain_cosine -> smartvector: ECE {_f3(raw.value_a)} -> "
              f"{_f3(raw.value_b)}{_dci(raw.ci)}; Platt-calibrated ECE {_f3(cal.value_a)} -> {_f3(cal.value_b)}"
              f"{_dci(cal.ci)}; Brier {_f3(bri.value_a)} -> {_f3(bri.value_b)}{_dci(bri.ci)}; AUROC "
              f"{_f3(auc.value_a)} -> {_f3(auc.value_b)}{_dci(auc.ci)} (difference, 95% CI); (a) "
              f"{'yes' if a else 'no'}, (b) {'yes' if b else 'no'}")
    return Verdict(verdict, figure, test, threshold, None, ECE_RULE)


# -- 4-6: the sweeps -------------------------------------------------------------------------------------------

ROBUST_RULE = ("per contradiction rate, smartvector vs plain_cosine pooled over seeds, Holm-adjusted over rates: "
               "holds: significantly above (adjusted p < 0.05) at every rate, smartvector's top-1 within 10 "
               "points from rate to rate and >= 50% at every rate; partly: significantly above at every rate; "
               "does not hold: otherwise; not measured: < 5 seeds at some rate")


def robust_across_contradiction(cs_df: pd.DataFrame | None, cs_summary: dict | None,
                                key: str = "dataset.contradiction_rate", *, min_seeds: int = MIN_SEEDS,
                                n_resamples: int = 10000, seed: int = 0) -> Verdict:
    """Claim 4: robust across contradiction rates (contradiction_sweep)."""
    threshold = ("Holm-adjusted p < 0.05 at every rate, range <= 10 points and min >= 50% (holds); adjusted "
                 "p < 0.05 at every rate (partly)")
    base_test = ("paired cluster sign-flip permutation of per-query top-1 per rate over (seed, family) test "
                 f"clusters pooled across >= {min_seeds} seeds, Holm over rates")
    problem = _frame_problem(cs_df, cs_summary, "contradiction_sweep")
    if problem:
        return not_measured(problem, "-", base_test, threshold, ROBUST_RULE)
    if key not in cs_df.columns:
        return not_measured(f"contradiction_sweep/queries.csv lacks the swept column {key}", "-", base_test,
                            threshold, ROBUST_RULE)
    rates = sorted(pd.to_numeric(cs_df[key]).dropna().unique())
    if not rates:
        return not_measured("no contradiction rates", "-", base_test, threshold, ROBUST_RULE)
    res = {}
    for rate in rates:
        r = pooled_paired(cs_df, "plain_cosine", "smartvector", "correct", group={key: float(rate)},
                          min_seeds=min_seeds, n_resamples=n_resamples, seed=seed)
        if r.reason:
            return not_measured(f"rate {rate:g}: {r.reason}", "-", base_test, threshold, ROBUST_RULE)
        res[float(rate)] = r
    adj = dict(zip(res, holm([r.p_value for r in res.values()])))
    sv = [r.mean_b for r in res.values()]
    pc = [r.mean_a for r in res.values()]
    above = all(r.diff > 0 and adj[k] < ALPHA for k, r in res.items())
    stable = max(sv) - min(sv) <= 0.10 + 1e-12
    verdict = "holds" if above and stable and min(sv) >= 0.5 else "partly" if above else "does not hold"
    n_seeds = min(r.n_seeds for r in res.values())
    test = (f"paired cluster sign-flip permutation of per-query top-1 at each of {len(res)} rates over "
            f"(seed, family) test clusters pooled across >= {n_seeds} seeds ({n_resamples} resamples, two-sided), "
            "Holm-adjusted over rates")
    n_sig = sum(r.diff > 0 and adj[k] < ALPHA for k, r in res.items())
    figure = (f"smartvector {_pct(min(sv))}-{_pct(max(sv))}, plain cosine {_pct(min(pc))}-{_pct(max(pc))} over "
              f"{len(res)} rates (pooled over seeds); significantly above at {n_sig} of {len(res)} rates "
              f"(largest Holm-adjusted p {format_p(max(adj.values()))})")
    return Verdict(verdict, figure, test, threshold, max(adj.values()), ROBUST_RULE)


TEMPORAL_RULE = ("smartvector top-1 on the ablation's weights presets, pooled over seeds: holds: dropping "
                 "temporal lowers top-1 significantly (paper vs no_temporal, p < 0.05) and no_temporal is "
                 "significantly below every other no_X (p < 0.05); partly: dropping temporal lowers top-1 "
                 "significantly but it is not the largest; does not hold: otherwise")


def _w(preset: str) -> dict:
    return {"weights": preset}


def temporal_largest(ab_df: pd.DataFrame | None, ab_summary: dict | None, system: str = "smartvector", *,
                     min_seeds: int = MIN_SEEDS, n_resamples: int = 10000, seed: int = 0) -> Verdict:
    """Claim 5: the temporal signal is the largest single contributor (ablation)."""
    threshold = "p < 0.05 for the drop and for each no_temporal vs no_X comparison (holds); for the drop (partly)"
    base_test = (f"paired cluster sign-flip permutations of per-query top-1 ({system}; weights presets paired on "
                 f"(seed, query), (seed, family) test clusters, >= {min_seeds} seeds): paper vs no_temporal, "
                 "no_X vs no_temporal")
    problem = _frame_problem(ab_df, ab_summary, "ablation")
    if problem:
        return not_measured(problem, "-", base_test, threshold, TEMPORAL_RULE)
    kw = dict(min_seeds=min_seeds, n_resamples=n_resamples, seed=seed)
    drops = {}
    for sig in SIGNALS:
        r = pooled_paired(ab_df, system, system, "correct", group=(_w("paper"), _w(f"no_{sig}")), **kw)
        if r.reason:
            return not_measured(r.reason, "-", base_test, threshold, TEMPORAL_RULE)
        drops[sig] = r
    vs = {}
    for sig in SIGNALS:
        if sig != "temporal":
            vs[sig] = pooled_paired(ab_df, system, system, "correct", group=(_w(f"no_{sig}"), _w("no_temporal")),
                                    **kw)
    t = drops["temporal"]
    test = (f"paired cluster sign-flip permutations of per-query top-1 ({system}; presets paired on (seed, query); "
            f"{t.n_clusters} (seed, family) test clusters over {t.n_seeds} seeds; {n_resamples} resamples): paper "
            "vs no_temporal, and no_X vs no_temporal for the other signals")
    dropped = t.diff < 0 and t.p_value < ALPHA
    largest = all(r.diff < 0 and r.p_value < ALPHA for r in vs.values())
    verdict = "holds" if dropped and largest else "partly" if dropped else "does not hold"
    p = max([t.p_value] + [r.p_value for r in vs.values()]) if verdict == "holds" else t.p_value
    figure = (f"{system} top-1 with all four signals {_pct(t.mean_a)} ({t.n_seeds} seeds pooled); change when one "
              "is dropped: " + ", ".join(f"{k} {100 * r.diff:+.1f} pts (p {format_p(r.p_value)})"
                                         for k, r in drops.items())
              + "; no_temporal vs " + ", ".join(f"no_{k} {100 * r.diff:+.1f} pts (p {format_p(r.p_value)})"
                                                 for k, r in vs.items()))
    return Verdict(verdict, figure, test, threshold, p, TEMPORAL_RULE)


CONFIDENCE_RULE = ("smartvector, weights paper vs no_confidence, pooled over >= 5 seeds: holds: top-1 higher "
                   "without confidence with paired p < 0.05; partly: higher, p >= 0.05; does not hold: not higher")


def confidence_removal_raises(ab_df: pd.DataFrame | None, ab_summary: dict | None, system: str = "smartvector", *,
                              min_seeds: int = MIN_SEEDS, n_resamples: int = 10000, seed: int = 0) -> Verdict:
    """Claim 6: removing the confidence signal raises accuracy (ablation, paper vs no_confidence)."""
    threshold = "higher and p < 0.05 (holds); higher (partly)"
    problem = _frame_problem(ab_df, ab_summary, "ablation")
    r = Paired(reason=problem) if problem else pooled_paired(
        ab_df, system, system, "correct", group=(_w("paper"), _w("no_confidence")), min_seeds=min_seeds,
        n_resamples=n_resamples, seed=seed)
    test = _perm_test(r, f"top-1 ({system}, weights paper vs no_confidence paired on (seed, query))", "ablation",
                      min_seeds, n_resamples)
    if r.reason:
        return not_measured(r.reason, "-", test, threshold, CONFIDENCE_RULE)
    higher = r.diff > 0
    verdict = "holds" if higher and r.p_value < ALPHA else "partly" if higher else "does not hold"
    figure = (f"{r.n_seeds} seeds pooled: {_pct(r.mean_a)} with it, {_pct(r.mean_b)} without "
              f"({100 * r.diff:+.1f} pts)")
    return Verdict(verdict, figure, test, threshold, r.p_value, CONFIDENCE_RULE)


# -- 7-8: re-embedding and feedback ----------------------------------------------------------------------------

REEMBED_RULE = ("holds: <= 1.1 chunks re-embedded per single-word edit and >= 70% fewer than a full re-embed at "
                "the paper's document size (4+ chunks), the index equal to a rebuild; partly: otherwise")


def reembed_single_word(rc: dict | None) -> Verdict:
    """Claim 7: a single-word edit re-embeds 1.0 chunk instead of 4.35 (deterministic counts)."""
    test = "exact counts over every edit of the edit set (no sampling)"
    threshold = "<= 1.1 chunks, >= 70% less at 4+ chunk documents, equivalent to a rebuild"
    if rc is None:
        return not_measured("missing reembed_cost/reembed_cost.json", "-", test, threshold, REEMBED_RULE)
    s = rc["strategies"]
    sw_full = s["full"]["by_edit_type"]["single_word"]
    sw_surg = s["surgical"]["by_edit_type"]["single_word"]
    n_edits = sw_surg.get("n_edits")
    if n_edits:
        test = f"exact counts over every edit of the edit set ({n_edits} single-word edits; no sampling)"
    full_m, surg_m = sw_full["chunks_reembedded_mean"], sw_surg["chunks_reembedded_mean"]
    big = s["surgical"].get("single_word_by_document_chunks", {}).get("4+")
    big_full = s["full"].get("single_word_by_document_chunks", {}).get("4+")
    equivalent = all(s[n]["equivalent_to_rebuild"]["equivalent"] for n in s)
    figure = f"all documents: {full_m:.2f} -> {surg_m:.2f} ({100 * (1 - surg_m / full_m):.0f}% less)"
    verdict = "partly"
    if big and big_full:
        red = 1 - big["chunks_reembedded_mean"] / big_full["chunks_reembedded_mean"]
        figure += (f"; documents of 4+ chunks: {big_full['chunks_reembedded_mean']:.2f} -> "
                   f"{big['chunks_reembedded_mean']:.2f} ({100 * red:.0f}% less)")
        verdict = "holds" if big["chunks_reembedded_mean"] <= 1.1 and red >= 0.7 and equivalent else "partly"
    figure += f"; equivalent to a rebuild: {'yes' if equivalent else 'NO'}"
    return Verdict(verdict, figure, test, threshold, None, REEMBED_RULE)


FEEDBACK_RULE = ("on families that gave no feedback: holds if higher than the frozen system in the last round "
                 "with p < 0.05; partly if higher; does not hold otherwise")


def feedback_improves(fl: dict | None) -> Verdict:
    """Claim 8: user feedback improves answers over time (feedback_loop.json, last round, held-out families).

    The JSON holds per-round aggregates and the last round's McNemar counts, no per-query outcomes, so the
    test is McNemar (queries treated as independent); a ``last_round_permutation_live_vs`` entry (a
    family-cluster permutation), if a later version writes one, is used instead."""
    threshold = "higher and p < 0.05 (holds); higher (partly)"
    test = "exact McNemar on the last round's discordant held-out queries (queries independent)"
    if fl is None:
        return not_measured("missing feedback_loop/feedback_loop.json", "-", test, threshold, FEEDBACK_RULE)
    summ = fl["summary"]
    live, frozen = summ["smartvector_live"], summ["smartvector_frozen"]
    p = summ.get("last_round_mcnemar_live_vs", {}).get("smartvector_frozen", {}).get("p_value")
    perm = summ.get("last_round_permutation_live_vs", {}).get("smartvector_frozen", {}).get("p_value")
    if perm is not None:
        test = ("paired family-cluster sign-flip permutation on the last round's held-out queries "
                f"(McNemar p {format_p(p)} beside it)")
        p = perm
    higher = live["top1_last"] > frozen["top1_last"]
    verdict = "holds" if higher and p is not None and p < ALPHA else "partly" if higher else "does not hold"
    figure = (f"held-out families: top-1 {_pct(live['top1_first'])} -> {_pct(live['top1_last'])} with feedback, "
              f"{_pct(frozen['top1_last'])} without ({'permutation' if perm is not None else 'McNemar'} p "
              f"{format_p(p)})")
    ins = summ.get("in_sample", {})
    if "smartvector_live" in ins and "smartvector_frozen" in ins:
        figure += (f"; in sample (the dev families that gave the feedback): "
                   f"{_pct(ins['smartvector_live']['top1_last'])} vs {_pct(ins['smartvector_frozen']['top1_last'])}")
    return Verdict(verdict, figure, test, threshold, p, FEEDBACK_RULE)


# -- 9-14: LiveVectorLake (verdicts and rules computed by experiments/lvl_eval.py) -----------------------------

def _lvl(d: dict | None, name: str, test: str, threshold: str, figure: Callable[[dict], str]) -> Verdict:
    """Restate lvl_eval.json's verdict of ``claims.<name>`` with the test it rests on."""
    if d is None:
        return not_measured("missing lvl_eval/lvl_eval.json", "-", test, threshold, "-")
    c = d.get("claims", {}).get(name)
    if c is None:
        return not_measured(f"no {name} in lvl_eval/lvl_eval.json", "-", test, threshold, "-")
    rule = c.get("rule", "-")
    v = c.get("verdict")
    try:
        fig = figure(c)
    except (KeyError, TypeError):
        return not_measured(f"a figure of {name} is missing from lvl_eval/lvl_eval.json", "-", test, threshold,
                            rule)
    if v not in ("holds", "partly", "does not hold"):
        return not_measured(f"lvl_eval says {v or 'nothing'}", fig, test, threshold, rule)
    return Verdict(v, fig, test, threshold, None, rule)


def _n(d: dict | None, *path) -> int | None:
    x = d
    for k in path:
        if not isinstance(x, dict) or k not in x:
            return None
        x = x[k]
    return x if isinstance(x, int) else None


def lvl_reprocessing(d: dict | None) -> Verdict:
    n = _n(d, "reembedding", "all_steps", "n")
    test = (f"mean of the per-document re-processed shares over every update step{f' ({n} steps)' if n else ''}, "
            "95% bootstrap CI over documents")
    return _lvl(d, "reprocessing_share", test, "mean <= 15% (holds); CI lower bound <= 15% (partly)",
                lambda c: f"{_pct(c['ours_mean_per_document'])}{_ci(c['ours_ci'])} per document and version step")


def lvl_hot_latency(d: dict | None) -> Verdict:
    def fig(c):
        h = c["ours_with_embedding"]
        return (f"{_ms(h['p50'])} / {_ms(h['p95'])} / {_ms(h['p99'])} with the query embedding; "
                f"{_ms(c['ours_query_only']['p50'])} p50 for the index alone")

    n = _n(d, "claims", "hot_latency_ms", "ours_with_embedding", "n")
    test = (f"percentiles (np.quantile, linear) of {n or 'the'} hot-query timings (every query, every "
            "repetition); thresholds on the percentiles, no significance test")
    return _lvl(d, "hot_latency_ms", test, "p50 / p95 / p99 <= 65 / 110 / 145 ms (holds); p50 <= 65 ms (partly)",
                fig)


def lvl_cold_latency(d: dict | None) -> Verdict:
    n = _n(d, "claims", "cold_latency_ms", "ours_uncached_with_embedding", "n")
    test = (f"p50 (np.quantile, linear) of {n or 'the'} uncached as-of query timings (every query, every "
            "repetition); threshold on the percentile, no significance test")
    return _lvl(d, "cold_latency_ms", test, "p50 <= 1.2 s (holds); p50 <= 2 s (partly)",
                lambda c: f"{_ms(c['ours_uncached_with_embedding']['p50'])} p50 reading Delta per query, "
                          "embedding included")


def lvl_change_detection(d: dict | None) -> Verdict:
    def fig(c):
        return (f"must-embed precision / recall {_pct(c['ours_must_embed']['precision'])} / "
                f"{_pct(c['ours_must_embed']['recall'])}; class labels agree on {_pct(c['ours_class_agreement'])} "
                f"of positions; deletions P/R {_pct(c['ours_deletions']['precision'])} / "
                f"{_pct(c['ours_deletions']['recall'])}")

    return _lvl(d, "change_detection_accuracy", "exact counts against the ground truth over every position of "
                "every update (no sampling)", "precision = recall = 1 everywhere (holds); must-embed exact (partly)",
                fig)


def lvl_temporal_accuracy(d: dict | None) -> Verdict:
    n = _n(d, "temporal", "historical", "n")
    test = (f"top-1 over {n or 'the'} historical queries, 95% bootstrap CI (queries independent); threshold on the "
            "point estimate")
    return _lvl(d, "temporal_accuracy", test, "top-1 >= 99% (holds); >= 90% (partly)",
                lambda c: f"top-1 against the gold answer: historical {_pct(c['ours_historical_top1'])}"
                          f"{_ci(c.get('ours_historical_top1_ci'))}, current {_pct(c['ours_current_top1'])} (their "
                          "figure restates the as-of filter; that part is the leakage row)")


def lvl_temporal_leakage(d: dict | None) -> Verdict:
    return _lvl(d, "temporal_leakage", "exact count of returned rows whose validity window excludes the query's "
                "as_of (every returned row; no sampling)", "0 rows (holds)",
                lambda c: f"{_pct(c['ours'], 2)} of returned rows outside their window")


LVL_RULES = (lvl_reprocessing, lvl_hot_latency, lvl_cold_latency, lvl_change_detection, lvl_temporal_accuracy,
             lvl_temporal_leakage)
