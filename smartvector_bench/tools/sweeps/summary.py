"""summary.json of a sweep: what each preset needs, as groupbys over the tidy frame (see :func:`summarise`),
returned as a :class:`~smartvector_bench.core.results.SweepSummary`."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from smartvector_bench.core.evaluation import measured
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.results import SWEEP_SCHEMA_VERSION, SweepSummary
from smartvector_bench.core.results.main import SPLITS
from smartvector_bench.core.results.sweep import USABLE
from smartvector_bench.tools.sweeps.jobs import Collection, JobResult, rel
from smartvector_bench.tools.sweeps.plan import num_key

def _r6(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def _mean_sd(values: pd.Series) -> dict:
    """Mean, sample standard deviation (ddof = 1; None for fewer than 2 values) and n, at 6 decimals.

    Summed one value after the other in the group's order, as every published summary.json was: pandas' own
    groupby mean (compensated summation) and std (Welford), numpy's pairwise sums and its square (x*x where
    Python's ``**`` calls pow) all differ in the last bits, and a mean of four 6-decimal values that ends in 5 at
    the 7th decimal then rounds the other way (in 7% of such groups): the bytes of summary.json would move."""
    xs = [float(v) for v in values]
    n = len(xs)
    if n == 0:
        return {"mean": None, "sd": None, "n": 0}
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else None
    return {"mean": _r6(mean), "sd": _r6(sd), "n": n}


def _py(v: Any) -> Any:
    """A cell as JSON wants it: a missing value (NaN) is None."""
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else v


def _stats(rows: pd.DataFrame, split: str, metrics=M.SUMMARY_METRICS) -> dict:
    """system -> metric -> mean / sd / n and the per-seed values on ``split``, over usable tidy rows in job order
    (every system of the rows, whatever their split)."""
    long = rows[rows["split"] == split].melt(id_vars=["system", "_seed"], value_vars=list(metrics),
                                             var_name="metric").dropna(subset=["value"])
    groups = dict(list(long.groupby(["system", "metric"], sort=False)))
    empty = long.iloc[:0]
    return {system: {m: {**_mean_sd((g := groups.get((system, m), empty))["value"]),
                         "per_seed": dict(zip(g["_seed"], g["value"]))} for m in metrics}
            for system in sorted(set(rows["system"]))}


def _values(c: Collection, key: str) -> list[str]:
    """The values of swept ``key``, in the plan's order."""
    return list(dict.fromkeys(v for j in c.plan.jobs if (v := j.swept.get(key)) is not None))


def summarise_seeds(c: Collection, t: pd.DataFrame) -> dict:
    u = t[t["status"].isin(USABLE)]
    per_split = {split: _stats(u, split) for split in SPLITS}
    return {"metrics": list(M.SUMMARY_METRICS), "seeds": sorted(set(u["_seed"]), key=num_key),
            "systems": {system: {split: per_split[split][system] for split in SPLITS}
                        for system in sorted(set(u["system"]))}}


def summarise_by(c: Collection, t: pd.DataFrame, key: str, split: str = "test") -> dict:
    u = t[t["status"].isin(USABLE)]
    groups = {v: u[u[key] == v] for v in _values(c, key)}
    return {"key": key, "split": split, "metrics": list(M.SUMMARY_METRICS), "values": list(groups),
            "by_value": {v: _stats(g, split) if len(g) else {} for v, g in groups.items()}}


def summarise_tune(c: Collection, t: pd.DataFrame) -> dict:
    system = str((c.experiment_cfg or {}).get("tune_system", "smartvector"))
    dev = t[t["status"].isin(USABLE) & (t["system"] == system) & (t["split"] == "dev") & t[M.TOP1].notna()]
    ranked = dev.assign(_mrr=dev[M.MRR_AT_10].map(lambda v: _py(v) or 0.0)).sort_values(
        [M.TOP1, "_mrr", "_label"], ascending=[False, False, True], kind="stable")
    out = {"system": system, "selection": "highest dev top1; ties: higher dev mrr_at_10, then the smaller "
                                          "override string; the winner's test figures are the result",
           "n_candidates": len(dev), "n_planned": len(c.plan.jobs), "final": len(dev) == len(c.plan.jobs),
           "winner": None, "dev_top5": [{"job": row["job"], "overrides": row["_label"], f"dev_{M.TOP1}": row[M.TOP1],
                                         f"dev_{M.MRR_AT_10}": _py(row[M.MRR_AT_10])}
                                        for row in ranked.head(5).to_dict("records")]}
    if len(ranked):
        best = next(r for r in c.results if r.job.num == ranked["job"].iloc[0])
        test = ((best.metrics["systems"].get(system) or {}).get("test")) or {}
        cfg = (best.metrics.get("provenance") or {}).get("config") or {}
        weights = ((cfg.get("retrievers") or {}).get(system) or {}).get("weights")
        dev_best = ranked.iloc[0]
        out["winner"] = {"job": best.job.num, "job_dir": rel(best.folder, c.sweep_dir),
                         "overrides": best.job.label, "swept": best.job.swept, "weights": weights,
                         "dev": {M.TOP1: dev_best[M.TOP1], M.MRR_AT_10: _py(dev_best[M.MRR_AT_10])},
                         "test": {k: test.get(k) for k in (M.N_QUERIES, *M.CI_METRICS, M.MCNEMAR_P)}
                         | {M.ci(k): test.get(M.ci(k)) for k in M.CI_METRICS}
                         | ({measured.KEY: test[measured.KEY]} if measured.KEY in test else {})}
    return out


def summarise_grid(c: Collection, t: pd.DataFrame, row_key: str, col_key: str, split: str = "test",
                   metrics=(M.TOP1, M.ECE)) -> dict:
    rows, cols = _values(c, row_key), _values(c, col_key)
    u = t[t["status"].isin(USABLE)]
    last = u[u["job"].isin(u.drop_duplicates([row_key, col_key], keep="last")["job"])]  # one job per cell
    cells = last[last["split"] == split]
    out = {"split": split, "rows": {"key": row_key, "values": rows}, "columns": {"key": col_key, "values": cols},
           "systems": {}}
    for system in sorted(set(u["system"])):
        mine = cells[cells["system"] == system]
        out["systems"][system] = {
            m: [[_py(v) for v in row] for row in mine.pivot(index=row_key, columns=col_key, values=m)
                .reindex(index=rows, columns=cols).itertuples(index=False)] for m in metrics}
    return out


HALF_LIFE = ("retrievers.smartvector.temporal.half_life_days", "retrievers.smartvector.confidence.half_life_days")


def summarise(c: Collection, t: pd.DataFrame) -> SweepSummary:
    """What each preset needs, from the tidy frame ``t`` (``collect.tidy_frame``):

    - seeds: per system and split, mean / sample sd / per-seed values of top1, stale_rate, rumor_rate, ece;
    - contradiction_sweep: per contradiction rate and system, mean / sd over seeds on test;
    - ablation: per weights preset and system, mean / sd over seeds on test;
    - tune: the winning weights by dev top-1 and their test figures, and the dev top-5;
    - half_life: test top1 and ECE grids (temporal half-life rows x confidence half-life columns);
    - anything else: per value of each swept key, mean / sd on test.
    """
    preset = c.preset
    if preset == "seeds":
        body = summarise_seeds(c, t)
    elif preset == "contradiction_sweep":
        body = summarise_by(c, t, "dataset.contradiction_rate")
    elif preset == "ablation":
        body = summarise_by(c, t, "weights")
    elif preset == "tune":
        body = summarise_tune(c, t)
    elif preset == "half_life":
        body = summarise_grid(c, t, *HALF_LIFE)
    else:
        body = {"by_key": {k: summarise_by(c, t, k) for k in c.plan.swept_keys}}
    counts = c.by_status()
    return SweepSummary(schema_version=SWEEP_SCHEMA_VERSION, sweep=c.sweep_dir.name, preset=preset,
                        jobs={"planned": len(c.plan.jobs), **counts}, all_complete=c.all_complete,
                        failed=[_job_line(r, c) for r in c.results if r.status == "failed"],
                        missing=[_job_line(r, c) for r in c.results if r.status == "missing"],
                        unplanned_folders=[rel(p, c.sweep_dir) for p in c.unplanned],
                        results=body)


def _job_line(r: JobResult, c: Collection) -> dict:
    return {"job": r.job.num, "job_dir": rel(r.folder, c.sweep_dir) if r.folder else r.job.dirname,
            "overrides": r.job.label or " ".join(r.job.overrides), "note": r.note}
