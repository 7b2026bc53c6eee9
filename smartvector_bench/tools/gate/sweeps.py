"""Each published sweep's ``summary.json`` recomputed from its own ``tidy.csv`` by a second, small implementation
(pandas), so that a summary edited by hand, or a collector bug (``sweeps/collect.py`` wrote both), fails naming
the number: ``results/seeds/summary.json: results.systems.smartvector.test.top1.mean: 0.259, committed 0.269``.

Its job counts must be tidy.csv's status column's; every figure of its ``results`` is recomputed (usable jobs:
complete or skipped; mean and sample sd; per-seed values; tune's winner by dev top-1, then dev MRR@10, then the
smaller override string, and its dev top-5; half_life's grids) within one unit of the 6th decimal (the two
implementations sum in other orders); queries.csv must give each tidy row's n_queries, top1, stale and rumor
rates. tune's ``winner.weights`` comes from the job's config: only its swept entries are checked."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.results import TIDY, ResultError, SweepSummary
from smartvector_bench.core.results.main import SPLITS
from smartvector_bench.core.results.sweep import STATUSES, USABLE
from smartvector_bench.tools.gate.common import Row
from smartvector_bench.tools.gate.replay import figure_misses, leaves
from smartvector_bench.tools.gate.tolerances import same_figure
from smartvector_bench.tools.sweeps.collect import JOB_COLUMNS
from smartvector_bench.tools.sweeps.plan import num_key  # the order seeds are listed in (not a recomputed number)

SUMMARY, QUERIES = SweepSummary.FILE, "queries.csv"
DECIMALS = 6
HALF_LIFE = ("retrievers.smartvector.temporal.half_life_days", "retrievers.smartvector.confidence.half_life_days")
BY_KEY = {"contradiction_sweep": "dataset.contradiction_rate", "ablation": "weights"}


def read_tidy(path: Path) -> tuple[pd.DataFrame, list[str]]:
    """tidy.csv as strings (empty cell: ''), and its swept-key columns (between the job columns and ``system``)."""
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in (*JOB_COLUMNS, "system", "split") if c not in df.columns]
    if missing:
        raise ValueError(f"column(s) {', '.join(missing)} missing")
    df["job"] = df["job"].astype(int)
    return df, list(df.columns[len(JOB_COLUMNS):list(df.columns).index("system")])


def _num(s) -> float | int | None:
    if s is None or (isinstance(s, float) and math.isnan(s)) or s == "":
        return None
    return int(float(s)) if str(s).lstrip("-").isdigit() else float(s)


def _numeric(df: pd.DataFrame, col: str) -> pd.Series:
    return pd.to_numeric(df[col].replace("", None), errors="coerce")


def _r6(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), DECIMALS)


def _group(usable: pd.DataFrame, split: str, metrics: list[str]) -> dict:
    """system -> metric -> mean / sample sd / n / per_seed over the usable rows of one split."""
    seed = "dataset.seed" if "dataset.seed" in usable.columns else "dataset_seed"
    rows, out = usable[usable["split"] == split], {}
    for system in sorted(usable["system"].unique()):
        sel, out[system] = rows[rows["system"] == system], {}
        for m in metrics:
            if m not in sel.columns:
                out[system][m] = {"error": f"no column {m} in tidy.csv"}
                continue
            v = _numeric(sel, m)
            keep, n = v.notna(), int(v.count())
            out[system][m] = {"mean": _r6(v.mean()) if n else None, "sd": _r6(v.std(ddof=1)) if n > 1 else None,
                              "n": n, "per_seed": {str(s): _r6(x) for s, x in zip(sel[seed][keep], v[keep])}}
    return out


def _values(df: pd.DataFrame, key: str) -> list[str]:
    return list(df.sort_values("job", kind="stable")[key].drop_duplicates())


def recompute_summary(preset: str | None, df: pd.DataFrame, swept: list[str], summary: dict) -> dict:
    """summary.json's ``results`` for ``preset`` recomputed from tidy.csv (the gate's own implementation)."""
    usable = df[df["status"].isin(USABLE) & (df["system"] != "")]
    res = summary["results"]
    metrics = [str(m) for m in (res.get("metrics") or M.SUMMARY_METRICS)]

    def by(key: str, split: str = "test") -> dict:
        values = _values(df, key)
        return {"key": key, "split": split, "metrics": metrics, "values": values,
                "by_value": {v: _group(usable[usable[key] == v], split, metrics) if (usable[key] == v).any() else {}
                             for v in values}}
    if preset == "seeds":
        seed = "dataset.seed" if "dataset.seed" in df.columns else "dataset_seed"
        per_split = {split: _group(usable, split, metrics) for split in SPLITS}
        return {"metrics": metrics, "seeds": sorted({str(s) for s in usable[seed]}, key=num_key),
                "systems": {s: {sp: per_split[sp][s] for sp in SPLITS} for s in sorted(usable["system"].unique())}}
    if preset in BY_KEY:
        return by(BY_KEY[preset])
    if preset == "tune":
        return _tune(df, usable, swept, res)
    if preset == "half_life":
        return _grid(df, usable, sorted({m for per in (res.get("systems") or {}).values() if isinstance(per, dict)
                                         for m in per}) or [M.ECE, M.TOP1])
    return {"by_key": {k: by(k) for k in swept}}


def _grid(df: pd.DataFrame, usable: pd.DataFrame, metrics: list[str], split: str = "test") -> dict:
    (rk, ck), test = HALF_LIFE, usable[usable["split"] == split]
    rows, cols = _values(df, rk), _values(df, ck)
    out = {"split": split, "rows": {"key": rk, "values": rows}, "columns": {"key": ck, "values": cols}, "systems": {}}
    for system in sorted(usable["system"].unique()):
        sel = test[test["system"] == system]
        tables = {m: sel.assign(_v=_numeric(sel, m)).pivot_table(index=rk, columns=ck, values="_v", aggfunc="first",
                                                                 dropna=False) for m in metrics}
        out["systems"][system] = {m: [[_r6(t.loc[a, b]) if a in t.index and b in t.columns else None for b in cols]
                                      for a in rows] for m, t in tables.items()}
    return out


def _tune(df: pd.DataFrame, usable: pd.DataFrame, swept: list[str], res: dict) -> dict:
    system = str(res.get("system", "smartvector"))
    sel = usable[usable["system"] == system]
    dev = sel[sel["split"] == "dev"].assign(_top1=lambda d: _numeric(d, M.TOP1),
                                            _mrr=lambda d: _numeric(d, M.MRR_AT_10).fillna(0.0))
    dev = dev[dev["_top1"].notna()].copy()
    dev["_label"] = [",".join(f"{k}={r[k]}" for k in sorted(swept)) for _, r in dev.iterrows()]
    ranked = dev.sort_values(["_top1", "_mrr", "_label"], ascending=[False, False, True], kind="stable")
    n_planned = int(df["job"].nunique())
    out = {"system": system, "selection": res.get("selection"), "n_candidates": int(len(ranked)),
           "n_planned": n_planned, "final": int(len(ranked)) == n_planned, "winner": None,
           "dev_top5": [{"job": int(r["job"]), "overrides": r["_label"], f"dev_{M.TOP1}": _num(r[M.TOP1]),
                         f"dev_{M.MRR_AT_10}": _num(r[M.MRR_AT_10])} for _, r in ranked.head(5).iterrows()]}
    if not len(ranked):
        return out
    best = ranked.iloc[0]
    test = sel[(sel["split"] == "test") & (sel["job"] == best["job"])]
    t = test.iloc[0] if len(test) else None
    test_out: dict = {}
    for k in ((res.get("winner") or {}).get("test") or {}):
        base = next((m for m in M.CI_METRICS if k == M.ci(m)), k)  # an interval: tidy's <metric>_lo / _hi
        test_out[k] = ({"error": f"no column {base} in tidy.csv"} if base not in df.columns else None if t is None
                       else [_num(t[M.lo(base)]), _num(t[M.hi(base)])] if k != base else _num(t[k]))
    weights, prefix = (res.get("winner") or {}).get("weights"), f"retrievers.{system}.weights."
    if isinstance(weights, dict):  # from the job's config: only the swept entries are known to tidy.csv
        weights = {**weights, **{k[len(prefix):]: _num(best[k]) for k in swept if k.startswith(prefix)}}
    out["winner"] = {"job": int(best["job"]), "job_dir": best["job_dir"], "overrides": best["_label"],
                     "swept": {k: best[k] for k in swept}, "weights": weights,
                     "dev": {M.TOP1: _num(best[M.TOP1]), M.MRR_AT_10: _num(best[M.MRR_AT_10])}, "test": test_out}
    return out


def job_counts(df: pd.DataFrame) -> dict:
    """What summary.json must say about the jobs, from tidy.csv's status column (one status per job)."""
    per_job = df.sort_values("job", kind="stable").drop_duplicates("job")
    return {"jobs": {"planned": int(len(per_job)), **{s: int((per_job["status"] == s).sum()) for s in STATUSES}},
            "all_complete": bool(per_job["status"].isin(USABLE).all()),
            **{k: [int(j) for j in per_job[per_job["status"] == k]["job"]] for k in ("failed", "missing")}}


# -- the committed summaries -----------------------------------------------------------------------------------

def sweep_folders(root: Path) -> list[Path]:
    """Every published sweep folder under the results root: one holding tidy.csv and summary.json."""
    return sorted(p.parent for p in Path(root).glob(f"*/{SUMMARY}") if (p.parent / TIDY).is_file())


def _row(file: str, what: str, misses: list[str], n: int) -> Row:
    return Row(what, f"{n} figures from tidy.csv", "equal" if not misses else f"{len(misses)} differ", "summary",
               not misses, "; ".join(misses[:3]) + (" ..." if len(misses) > 3 else ""), file)


def check_summaries(root: Path) -> list[Row]:
    """summary.json of every published sweep under ``root`` against its tidy.csv (see the module docstring)."""
    rows: list[Row] = []
    for folder in sweep_folders(root):
        rel = f"{folder.name}/{SUMMARY}"
        try:
            summary = SweepSummary.load(folder / SUMMARY, rel).to_dict()
            df, swept = read_tidy(folder / TIDY)
        except (ResultError, OSError, ValueError) as exc:
            rows.append(_row(rel, "readable", [str(exc)], 1))
            continue
        counts = job_counts(df)
        stored = {k: [it["job"] for it in summary[k]] if k in ("failed", "missing") else summary[k] for k in counts}
        misses = [] if summary["preset"] == folder.name else [f"preset {summary['preset']!r}: not the folder's"]
        rows.append(_row(rel, "jobs", misses + figure_misses(counts, stored, False), len(leaves(counts))))
        try:
            recomputed = recompute_summary(summary["preset"], df, swept, summary)
        except (KeyError, ValueError, TypeError) as exc:
            rows.append(_row(rel, "results", [f"{type(exc).__name__}: {exc}"], 1))
            continue
        rows.append(_row(rel, "results", figure_misses(recomputed, summary["results"], False),
                         len(leaves(summary["results"]))))
        if (folder / QUERIES).is_file():
            rows.append(check_queries(folder, df))
    return rows


QUERY_RATES = {"correct": M.TOP1, "stale": M.STALE_RATE, "rumor": M.RUMOR_RATE}


def check_queries(folder: Path, tidy) -> Row:
    """queries.csv against tidy.csv: per job, system and split, its row count is n_queries and its correct /
    stale / rumor means are top1 / stale_rate / rumor_rate."""
    rel = f"{folder.name}/{QUERIES}"
    try:
        q = pd.read_csv(folder / QUERIES, dtype={"system": str, "split": str})
        agg = q.groupby(["job", "system", "split"]).agg(n=("correct", "size"), **{k: (k, "mean") for k in QUERY_RATES})
    except (OSError, ValueError, KeyError) as exc:
        return _row(rel, "per-query rows", [f"{type(exc).__name__}: {exc}"], 1)
    misses, n = [], 0
    for _, r in tidy[tidy["status"].isin(USABLE) & (tidy["system"] != "")].iterrows():
        key, n = (int(r["job"]), r["system"], r["split"]), n + 1
        if key not in agg.index:
            misses.append(f"job {key[0]} {key[1]} {key[2]}: no query rows")
            continue
        got = {M.N_QUERIES: int(agg.loc[key]["n"])} | {m: round(float(agg.loc[key][c]), DECIMALS)
                                                        for c, m in QUERY_RATES.items()}
        misses += [f"job {key[0]} {key[1]} {key[2]} {m}: {v}, tidy.csv {r[m]}" for m, v in got.items()
                   if _num(r[m]) is None or not same_figure(v, _num(r[m]), False)]
    return _row(rel, "per-query rows", misses, n)
