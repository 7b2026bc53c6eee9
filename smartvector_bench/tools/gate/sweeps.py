"""The published sweeps for the regression gate (``smartvector_bench.tools.gate.regress``): summaries recomputed from their
own tidy.csv, and reduced reruns of each preset through the real CLI compared row by row.

Why: a sweep's ``summary.json`` is what the paper quotes, but it is written by the same collector
(``sweeps/collect.py``) that wrote ``tidy.csv``; the gate recomputes it with a second, small implementation
(pandas) so that a summary edited by hand, or a collector bug, fails naming the number. And a sweep is never
rerun whole in CI (27-128 jobs), so each preset is rerun on a few of its own jobs, the same multirun command it
was published with, and those jobs' tidy rows must equal the committed ones.

1. ``check_summaries(root)`` (committed check, about a second): for every ``<root>/<preset>/`` holding
   ``tidy.csv`` and ``summary.json``, every number of ``summary.json``'s ``results`` is recomputed from tidy.csv
   (usable jobs: status complete or skipped; mean and sample sd, ddof 1, None below 2 values; the per-seed
   values; tune's winner by dev top-1, then dev MRR@10, then the smaller override string, and its dev top-5;
   half_life's grids) and compared at 6 decimals (equal after rounding, or within one unit of the 6th decimal:
   the two implementations sum in different orders); strings, lists and key sets must agree too. The job
   counts (planned, complete, skipped, failed, missing, all_complete, the failed and missing lists) must agree
   with tidy.csv's status column; a ``queries.csv`` (per-query outcomes, when the collector wrote one) must give
   each tidy row's n_queries, top1, stale_rate and rumor_rate. tune's ``winner.weights`` comes from the job's
   config, not tidy.csv: only its swept entries are checked. A miss names the file and the JSON path:
   ``results/seeds/summary.json: results.systems.smartvector.test.top1.mean summary 0.269, tidy.csv gives 0.259``.
2. ``rerun_sweeps(root, workdir)``: each published preset in ``REDUCED`` is rerun as a Hydra multirun with its
   sweeper params narrowed on the command line (a swept key given on the command line replaces the preset's
   list: Hydra 1.3's basic sweeper lets the command line win), with the task overrides the publication
   recorded (``tidy.provenance.json``), into a temp folder, sharing a private embedding cache (a vector depends
   on its text alone). ``compare_tidy`` then matches each rerun job to the committed job with the same swept
   values and compares every committed tidy.csv column per system and split: metrics at 6 decimals, p-values
   (``mcnemar_p``, ``permutation_p``) also on a log10 scale, n_queries, dataset_sha256 and dataset_seed
   exactly. Not compared: the job bookkeeping columns, ``git_sha`` and ``config_sha256`` (another commit, another
   cache path). A committed sweep without the rerun job, or a column missing from the rerun, is a miss; a preset
   not published is skipped with a note.

lvl_eval is rerun by ``regress`` itself (``EXPERIMENTS['lvl_eval']``, ``experiment.repeats=1``) and compared
with the expected values of every non-timing figure; see ``regress``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smartvector_bench.tools.sweeps.collect import _num_key  # the order values are listed in (presentation, not a recomputed number)

TIDY, SUMMARY, TIDY_PROVENANCE, QUERIES = "tidy.csv", "summary.json", "tidy.provenance.json", "queries.csv"
JOB_COLUMNS = ("sweep", "job", "job_dir", "status", "overrides")
USABLE = ("complete", "skipped")
STATUSES = ("complete", "skipped", "failed", "missing")
SPLITS = ("dev", "test")
P_COLUMNS = ("mcnemar_p", "permutation_p")
EXACT_COLUMNS = ("dataset_sha256", "dataset_seed", "n_queries")
NOT_COMPARED = ("git_sha", "config_sha256")
DECIMALS = 6
TOL = 10 ** -DECIMALS + 1e-12  # one unit of the 6th decimal: both sides are 6-decimal roundings of float sums

# The reduced reruns, one place: preset -> command-line overrides that narrow its sweeper params to a few of its
# own jobs. Measured on this 2-core machine with the real model, under other load, two at a time: 287 s for all
# five (seeds 287 s, its one job runs all 13 systems, smartvector_ref and smartvector_ref_soft ~300 s of CPU
# between them; beside it ablation 53 s, contradiction_sweep 63 s, half_life 32 s, tune 25 s).
REDUCED: dict[str, tuple[str, ...]] = {
    "seeds": ("dataset.seed=1",),
    "ablation": ("weights=paper,no_confidence", "dataset.seed=1"),
    "contradiction_sweep": ("dataset.contradiction_rate=0.0,0.75", "dataset.seed=1"),
    "half_life": ("retrievers.smartvector.temporal.half_life_days=30",
                  "retrievers.smartvector.confidence.half_life_days=7,365"),
    "tune": ("retrievers.smartvector.weights.semantic=0.7", "retrievers.smartvector.weights.temporal=0",
             "retrievers.smartvector.weights.confidence=0.25", "retrievers.smartvector.weights.relational=0,0.15"),
}
SWEEPS = tuple(REDUCED)
HALF_LIFE = ("retrievers.smartvector.temporal.half_life_days", "retrievers.smartvector.confidence.half_life_days")
BY_KEY = {"contradiction_sweep": "dataset.contradiction_rate", "ablation": "weights"}


@dataclass
class Check:
    file: str          # relative to the results root
    path: str          # JSON path or tidy row and column
    recomputed: Any    # what tidy.csv (or the committed sweep) gives
    stored: Any        # what the checked file (or the rerun) holds
    ok: bool
    note: str = ""
    words: tuple[str, str] = ("summary", "tidy.csv gives")

    def line(self) -> str:
        return (f"{self.path} {self.words[0]} {_show(self.stored)}, {self.words[1]} {_show(self.recomputed)}"
                + (f" ({self.note})" if self.note else ""))


def _show(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.6g}"
    s = json.dumps(x) if isinstance(x, (list, dict)) else str(x)
    return s if len(s) <= 60 else s[:57] + "..."


# -- reading tidy.csv -------------------------------------------------------------------------------------------

def read_tidy(path: Path):
    """tidy.csv as strings (empty cell: ''), and its swept-key columns (between the job columns and ``system``)."""
    import pandas as pd

    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    cols = list(df.columns)
    missing = [c for c in (*JOB_COLUMNS, "system", "split") if c not in cols]
    if missing:
        raise ValueError(f"column(s) {', '.join(missing)} missing")
    swept = cols[len(JOB_COLUMNS):cols.index("system")]
    df["job"] = df["job"].astype(int)
    return df, swept


def _num(s: Any) -> float | int | None:
    if s is None or (isinstance(s, float) and math.isnan(s)) or s == "":
        return None
    v = float(s)
    return int(v) if str(s).lstrip("-").isdigit() else v


def _numeric(df, col: str):
    import pandas as pd

    return pd.to_numeric(df[col].replace("", None), errors="coerce")


def _stats(values) -> dict:
    """mean / sample sd / n of a pandas Series (NaN dropped), 6 decimals."""
    v = values.dropna()
    n = int(v.count())
    mean = None if n == 0 else round(float(v.mean()), DECIMALS)
    sd = None if n < 2 else round(float(v.std(ddof=1)), DECIMALS)
    return {"mean": mean, "sd": sd, "n": n}


def _seed_col(df) -> str:
    return "dataset.seed" if "dataset.seed" in df.columns else "dataset_seed"


def _values_in_plan_order(df, key: str) -> list[str]:
    return list(df.sort_values("job", kind="stable")[key].drop_duplicates())


def _group(usable, split: str, metrics: list[str]) -> dict:
    """system -> metric -> mean / sd / n / per_seed over the usable rows of one split."""
    out: dict = {}
    rows = usable[usable["split"] == split]
    seed = _seed_col(usable)
    for system in sorted(usable["system"].unique()):
        sel = rows[rows["system"] == system]
        out[system] = {}
        for m in metrics:
            vals = _numeric(sel, m) if m in sel.columns else None
            if vals is None:
                out[system][m] = {"error": f"no column {m} in tidy.csv"}
                continue
            keep = vals.notna()
            per_seed = {str(s): round(float(v), DECIMALS) for s, v in zip(sel[seed][keep], vals[keep])}
            out[system][m] = {**_stats(vals), "per_seed": per_seed}
    return out


def recompute_summary(preset: str | None, df, swept: list[str], summary: dict) -> dict:
    """summary.json's ``results`` for ``preset`` recomputed from tidy.csv (the gate's own implementation)."""
    usable = df[df["status"].isin(USABLE) & (df["system"] != "")]
    res = summary.get("results") if isinstance(summary.get("results"), dict) else {}
    metrics = [str(m) for m in (res.get("metrics") or ["top1", "stale_rate", "rumor_rate", "ece"])]
    if preset == "seeds":
        seed = _seed_col(df)
        seeds = sorted({str(s) for s in usable[seed]}, key=_num_key)
        per_split = {split: _group(usable, split, metrics) for split in SPLITS}
        return {"metrics": metrics, "seeds": seeds,
                "systems": {s: {split: per_split[split][s] for split in SPLITS}
                            for s in sorted(usable["system"].unique())}}
    if preset in BY_KEY:
        return _by(df, usable, BY_KEY[preset], metrics)
    if preset == "tune":
        return _tune(df, usable, swept, res)
    if preset == "half_life":
        grid_metrics = sorted({m for per in (res.get("systems") or {}).values() if isinstance(per, dict)
                               for m in per}) or ["ece", "top1"]
        return _grid(df, usable, *HALF_LIFE, grid_metrics)
    return {"by_key": {k: _by(df, usable, k, metrics) for k in swept}}


def _by(df, usable, key: str, metrics: list[str], split: str = "test") -> dict:
    values = _values_in_plan_order(df, key)
    return {"key": key, "split": split, "metrics": metrics, "values": values,
            "by_value": {v: _group(usable[usable[key] == v], split, metrics) if (usable[key] == v).any() else {}
                         for v in values}}


def _grid(df, usable, row_key: str, col_key: str, metrics: list[str], split: str = "test") -> dict:
    rows, cols = _values_in_plan_order(df, row_key), _values_in_plan_order(df, col_key)
    test = usable[usable["split"] == split]
    out = {"split": split, "rows": {"key": row_key, "values": rows}, "columns": {"key": col_key, "values": cols},
           "systems": {}}
    for system in sorted(usable["system"].unique()):
        sel = test[test["system"] == system]
        out["systems"][system] = {}
        for m in metrics:
            table = sel.assign(_v=_numeric(sel, m)).pivot_table(index=row_key, columns=col_key, values="_v",
                                                                 aggfunc="first", dropna=False)
            out["systems"][system][m] = [[_cell(table, a, b) for b in cols] for a in rows]
    return out


def _cell(table, a, b):
    try:
        v = table.loc[a, b]
    except KeyError:
        return None
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), DECIMALS)


def _tune(df, usable, swept: list[str], res: dict) -> dict:
    system = str(res.get("system", "smartvector"))
    sel = usable[usable["system"] == system]
    dev = sel[sel["split"] == "dev"].assign(_top1=lambda d: _numeric(d, "top1"),
                                            _mrr=lambda d: _numeric(d, "mrr_at_10").fillna(0.0))
    dev = dev[dev["_top1"].notna()].copy()
    dev["_label"] = [",".join(f"{k}={r[k]}" for k in sorted(swept)) for _, r in dev.iterrows()]
    ranked = dev.sort_values(["_top1", "_mrr", "_label"], ascending=[False, False, True], kind="stable")
    n_planned = int(df["job"].nunique())
    out = {"system": system, "selection": res.get("selection"), "n_candidates": int(len(ranked)),
           "n_planned": n_planned, "final": int(len(ranked)) == n_planned, "winner": None, "dev_top5": []}
    for _, r in ranked.head(5).iterrows():
        out["dev_top5"].append({"job": int(r["job"]), "overrides": r["_label"], "dev_top1": _num(r["top1"]),
                                "dev_mrr_at_10": _num(r["mrr_at_10"])})
    if len(ranked):
        best = ranked.iloc[0]
        test = sel[(sel["split"] == "test") & (sel["job"] == best["job"])]
        t = test.iloc[0] if len(test) else None
        stored_test = ((res.get("winner") or {}).get("test") or {})
        test_out: dict = {}
        for k in stored_test:
            base = k[:-3] if k.endswith("_ci") else k
            if base not in df.columns:
                test_out[k] = {"error": f"no column {base} in tidy.csv"}
            elif t is None:
                test_out[k] = None
            elif k.endswith("_ci"):
                test_out[k] = [_num(t[f"{base}_lo"]), _num(t[f"{base}_hi"])]
            else:
                test_out[k] = _num(t[k])
        weights = (res.get("winner") or {}).get("weights")
        prefix = f"retrievers.{system}.weights."
        if isinstance(weights, dict):  # from the job's config: only the swept entries are known to tidy.csv
            weights = {**weights, **{k[len(prefix):]: _num(best[k]) for k in swept if k.startswith(prefix)}}
        out["winner"] = {"job": int(best["job"]), "job_dir": best["job_dir"], "overrides": best["_label"],
                         "swept": {k: best[k] for k in swept}, "weights": weights,
                         "dev": {"top1": _num(best["top1"]), "mrr_at_10": _num(best["mrr_at_10"])},
                         "test": test_out}
    return out


def job_counts(df) -> dict:
    """What summary.json must say about the jobs, from tidy.csv's status column (one status per job)."""
    per_job = df.sort_values("job", kind="stable").drop_duplicates("job")
    counts = {s: int((per_job["status"] == s).sum()) for s in STATUSES}
    return {"jobs": {"planned": int(len(per_job)), **counts},
            "all_complete": bool(per_job["status"].isin(USABLE).all()),
            "failed": [int(j) for j in per_job[per_job["status"] == "failed"]["job"]],
            "missing": [int(j) for j in per_job[per_job["status"] == "missing"]["job"]]}


# -- comparing two JSON trees -----------------------------------------------------------------------------------

def _same(stored: Any, recomputed: Any) -> bool:
    if isinstance(recomputed, bool) or isinstance(stored, bool):
        return stored is recomputed or stored == recomputed and type(stored) is type(recomputed)
    if isinstance(recomputed, (int, float)) and isinstance(stored, (int, float)):
        if not (math.isfinite(stored) and math.isfinite(recomputed)):
            return False
        return (round(float(stored), DECIMALS) == round(float(recomputed), DECIMALS)
                or abs(float(stored) - float(recomputed)) <= TOL)
    return stored == recomputed


def compare_tree(stored: Any, recomputed: Any, path: str, file: str) -> list[Check]:
    """Every leaf of ``stored`` against ``recomputed`` (and every key of either), one Check per leaf."""
    if isinstance(recomputed, dict) and set(recomputed) == {"error"}:
        return [Check(file, path, "ERROR", stored, False, recomputed["error"])]
    if isinstance(stored, dict) and isinstance(recomputed, dict):
        out = []
        for k in list(stored) + [k for k in recomputed if k not in stored]:
            p = f"{path}.{k}"
            if k not in recomputed:
                out.append(Check(file, p, "MISSING", stored[k], False, "not derivable from tidy.csv"))
            elif k not in stored:
                out.append(Check(file, p, recomputed[k], "MISSING", False, "missing from the summary"))
            else:
                out += compare_tree(stored[k], recomputed[k], p, file)
        return out
    if isinstance(stored, list) and isinstance(recomputed, list):
        if len(stored) != len(recomputed):
            return [Check(file, path, recomputed, stored, False, f"{len(stored)} items, tidy.csv gives "
                                                                  f"{len(recomputed)}")]
        if all(not isinstance(x, (dict, list)) for x in stored + recomputed):
            bad = [i for i, (s, r) in enumerate(zip(stored, recomputed)) if not _same(s, r)]
            if len(stored) > 0 and all(isinstance(x, str) for x in stored):
                return [Check(file, path, recomputed, stored, not bad, f"item {bad[0]} differs" if bad else "")]
            return [Check(file, f"{path}.{i}", r, s, _same(s, r)) for i, (s, r) in enumerate(zip(stored, recomputed))]
        out = []
        for i, (s, r) in enumerate(zip(stored, recomputed)):
            out += compare_tree(s, r, f"{path}.{i}", file)
        return out
    ok = _same(stored, recomputed)
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (stored, recomputed))
    return [Check(file, path, recomputed, stored, ok,
                  "" if ok else (f"differs at {DECIMALS} decimals" if numbers else "differs"))]


# -- 1. the committed summaries ---------------------------------------------------------------------------------

def sweep_folders(root: Path) -> list[Path]:
    """Every published sweep folder under the results root: one holding tidy.csv and summary.json."""
    return sorted(p.parent for p in Path(root).glob(f"*/{SUMMARY}") if (p.parent / TIDY).is_file())


def check_summaries(root: Path) -> list[Check]:
    """summary.json of every published sweep under ``root`` against its tidy.csv (see the module docstring)."""
    checks: list[Check] = []
    for folder in sweep_folders(root):
        rel = f"{folder.name}/{SUMMARY}"
        try:
            summary = json.loads((folder / SUMMARY).read_text(encoding="utf-8"))
            df, swept = read_tidy(folder / TIDY)
        except (OSError, ValueError) as exc:
            checks.append(Check(rel, "readable", "JSON and CSV", "ERROR", False, f"{type(exc).__name__}: {exc}"))
            continue
        if not isinstance(summary, dict):
            checks.append(Check(rel, "summary", "an object", type(summary).__name__, False))
            continue
        preset = summary.get("preset")
        checks.append(Check(rel, "preset", folder.name, preset, preset == folder.name,
                            "" if preset == folder.name else "the folder is not the preset's"))
        for key, value in job_counts(df).items():
            stored = summary.get(key)
            if key in ("failed", "missing") and isinstance(stored, list):
                stored = [it.get("job") if isinstance(it, dict) else it for it in stored]
            checks += compare_tree(stored, value, key, rel)
        try:
            recomputed = recompute_summary(preset, df, swept, summary)
        except (KeyError, ValueError, TypeError) as exc:
            checks.append(Check(rel, "results", "recomputable", "ERROR", False, f"{type(exc).__name__}: {exc}"))
            continue
        checks += compare_tree(summary.get("results"), recomputed, "results", rel)
        if (folder / QUERIES).is_file():
            checks += check_queries(folder, df)
    return checks


QUERY_RATES = {"correct": "top1", "stale": "stale_rate", "rumor": "rumor_rate"}


def check_queries(folder: Path, tidy) -> list[Check]:
    """The per-query table (queries.csv, when the collector wrote one) against tidy.csv: per job, system and
    split, its row count is n_queries and its correct / stale / rumor means are top1 / stale_rate / rumor_rate."""
    import pandas as pd

    rel = f"{folder.name}/{QUERIES}"
    try:
        q = pd.read_csv(folder / QUERIES, dtype={"system": str, "split": str})
    except (OSError, ValueError) as exc:
        return [Check(rel, "readable", "CSV", "ERROR", False, str(exc))]
    missing = [c for c in ("job", "system", "split", *QUERY_RATES) if c not in q.columns]
    if missing:
        return [Check(rel, "columns", "job, system, split, correct, stale, rumor", "MISSING", False,
                      f"column(s) {', '.join(missing)} missing")]
    agg = q.groupby(["job", "system", "split"]).agg(n=("correct", "size"),
                                                    **{k: (k, "mean") for k in QUERY_RATES})
    checks = []
    usable = tidy[tidy["status"].isin(USABLE) & (tidy["system"] != "")]
    for _, r in usable.iterrows():
        name = f"queries[job={r['job']},system={r['system']},split={r['split']}]"
        key = (int(r["job"]), r["system"], r["split"])
        if key not in agg.index:
            checks.append(Check(rel, name, "rows", "MISSING", False, "no query rows for a tidy.csv row",
                                ("queries.csv has", "tidy.csv has")))
            continue
        a = agg.loc[key]
        checks.append(Check(rel, f"{name}.n_queries", _num(r["n_queries"]), int(a["n"]),
                            _num(r["n_queries"]) == int(a["n"]), "", ("queries.csv gives", "tidy.csv")))
        for col, metric in QUERY_RATES.items():
            want, got = _num(r[metric]), round(float(a[col]), DECIMALS)
            ok = want is not None and _same(got, want)
            checks.append(Check(rel, f"{name}.{metric}", want, got, ok, "" if ok else f"mean of {col} differs",
                                ("queries.csv gives", "tidy.csv")))
    return checks


# -- 2. reduced reruns ------------------------------------------------------------------------------------------

def _norm(v: Any) -> Any:
    try:
        return float(v)
    except (TypeError, ValueError):
        return str(v)


def _job_key(row: dict, keys: list[str]) -> tuple:
    return tuple((k, _norm(row.get(k))) for k in keys)


def _label(key: tuple) -> str:
    return ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in key)


def compare_tidy(preset: str, rerun_rows: list[dict], committed_rows: list[dict], swept: list[str],
                 columns: list[str]) -> list[Check]:
    """Each rerun job's tidy rows (per system and split) against the committed job with the same swept values:
    every committed column but the job bookkeeping and NOT_COMPARED ones. ``columns``: the committed header."""
    from smartvector_bench.tools.gate.regress import P_LOG10_TOL, _log10_close

    file = f"{preset}/{TIDY}"
    value_cols = [c for c in columns if c not in JOB_COLUMNS and c not in swept and c not in ("system", "split")
                  and c not in NOT_COMPARED]
    committed: dict[tuple, dict] = {}
    for r in committed_rows:
        if r.get("status") in USABLE and r.get("system"):
            committed[(_job_key(r, swept), r["system"], r["split"])] = r
    jobs = {_job_key(r, swept) for r in committed_rows}
    checks: list[Check] = []
    seen = set()
    for r in rerun_rows:
        key = _job_key(r, swept)
        where = f"{preset}.tidy[{_label(key)}"
        if r.get("status") not in USABLE or not r.get("system"):
            checks.append(Check(file, f"{where}].status", "complete", r.get("status"), False,
                                "the rerun job has no usable metrics", ("rerun", "expected")))
            continue
        if key not in jobs:
            if key not in seen:
                checks.append(Check(file, f"{where}]", "a committed job", "MISSING", False,
                                    "the committed sweep has no such job", ("committed", "rerun has")))
            seen.add(key)
            continue
        c = committed.get((key, r["system"], r["split"]))
        name = f"{where},system={r['system']},split={r['split']}]"
        if c is None:
            checks.append(Check(file, name, "a committed row", "MISSING", False,
                                "no committed row for this system and split", ("committed", "rerun has")))
            continue
        for col in value_cols:
            if col not in r:
                checks.append(Check(file, f"{name}.{col}", c.get(col), "MISSING", False,
                                    "column missing from the rerun", ("rerun", "committed")))
                continue
            got, want = r[col], c[col]
            if col in EXACT_COLUMNS or _num_or_none(want) is False:
                ok, why = got == want, "differs"
            else:
                g, w = _num_or_none(got), _num_or_none(want)
                if g is None or w is None:
                    ok, why = g is None and w is None, "empty on one side"
                else:
                    ok = round(g, DECIMALS) == round(w, DECIMALS)
                    why = f"differs at {DECIMALS} decimals"
                    if ok and col in P_COLUMNS:
                        ok, why = _log10_close(g, w)
                        why = why or f"log10 +/- {P_LOG10_TOL:g}"
            checks.append(Check(file, f"{name}.{col}", want, got, ok, "" if ok else why, ("rerun", "committed")))
    return checks


def _num_or_none(s: Any):
    """A float, None for an empty cell, False for a non-number."""
    if s is None or s == "":
        return None
    try:
        return float(s)
    except ValueError:
        return False


def _key_of(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def rerun_command(preset: str, folder: Path, sweep_dir: Path, cache: Path, bench: list[str]) -> list[str]:
    """The multirun the publication recorded (its task overrides in tidy.provenance.json, else the
    PROVENANCE.json command), narrowed by ``REDUCED[preset]`` into ``sweep_dir`` with a private cache."""
    recorded: list[str] = []
    try:
        recorded = [str(x) for x in json.loads((folder / TIDY_PROVENANCE).read_text(encoding="utf-8"))
                    .get("task_overrides") or []]
    except (OSError, ValueError, AttributeError):
        pass
    if not recorded:
        try:
            cmd = json.loads((folder / "PROVENANCE.json").read_text(encoding="utf-8")).get("command") or []
            recorded = [str(x) for x in cmd[1:] if x != "-m"]
        except (OSError, ValueError, AttributeError):
            recorded = []
    if not any(_key_of(o) == "experiment" for o in recorded):
        recorded.insert(0, f"experiment={preset}")
    ours = [*REDUCED[preset], f"hydra.sweep.dir={sweep_dir}", f"embedder.cache_path={cache}", "print_table=false"]
    mine = {_key_of(o) for o in ours}
    return [*bench, "-m", *[o for o in recorded if _key_of(o) not in mine], *ours]


@dataclass
class SweepRerun:
    preset: str
    command: list[str] = field(default_factory=list)
    wall_time_s: float = 0.0
    error: str | None = None
    checks: list[Check] = field(default_factory=list)
    note: str = ""


def rerun_sweep(preset: str, root: Path, workdir: Path, bench: list[str], env: dict, cwd: Path,
                extra: tuple[str, ...] = (), timeout: float | None = None) -> SweepRerun:
    """One reduced rerun of ``preset`` and its comparison with ``root/<preset>/tidy.csv``."""
    import csv

    folder = Path(root) / preset
    r = SweepRerun(preset)
    if not (folder / TIDY).is_file():
        r.note = f"{preset}: not published in {root} (no {preset}/{TIDY}); reduced rerun skipped"
        return r
    sweep_dir = Path(workdir) / preset
    if sweep_dir.exists():
        shutil.rmtree(sweep_dir)
    r.command = rerun_command(preset, folder, sweep_dir, Path(workdir) / "embeddings.sqlite", bench) + list(extra)
    log = Path(workdir) / f"{preset}.log"
    t0 = time.perf_counter()
    with open(log, "w", encoding="utf-8") as fh:
        try:
            proc = subprocess.run(r.command, cwd=cwd, env={**os.environ, **env}, stdout=fh,
                                  stderr=subprocess.STDOUT, timeout=timeout, check=False)
            if proc.returncode != 0:
                r.error = f"exit code {proc.returncode}"
        except subprocess.TimeoutExpired:
            r.error = f"timed out after {timeout:g} s"
        except OSError as exc:
            r.error = f"could not start {r.command[0]}: {exc}"
    r.wall_time_s = time.perf_counter() - t0
    if r.error is None and not (sweep_dir / TIDY).is_file():
        r.error = f"{sweep_dir / TIDY} not written"
    if r.error is not None:
        tail = [ln for ln in log.read_text(encoding="utf-8", errors="replace").replace("\r", "\n").splitlines()
                if ln.strip()][-6:]
        r.checks.append(Check(f"{preset}/{TIDY}", f"{preset} (reduced rerun)", "exit 0", r.error, False,
                              " / ".join(tail), ("rerun", "expected")))
        return r
    with open(folder / TIDY, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        header, committed_rows = list(reader.fieldnames or []), list(reader)
    with open(sweep_dir / TIDY, encoding="utf-8", newline="") as fh:
        rerun_rows = list(csv.DictReader(fh))
    swept = header[len(JOB_COLUMNS):header.index("system")] if "system" in header else []
    r.checks = compare_tidy(preset, rerun_rows, committed_rows, swept, header)
    if not rerun_rows:
        r.checks.append(Check(f"{preset}/{TIDY}", f"{preset} (reduced rerun)", "jobs", "none", False,
                              "the rerun's tidy.csv has no rows", ("rerun", "expected")))
    return r


def rerun_sweeps(presets: list[str], root: Path, workdir: Path, bench: list[str], env: dict, cwd: Path,
                 jobs: int = 1, extra: tuple[str, ...] = ()) -> dict[str, SweepRerun]:
    Path(workdir).mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {p: pool.submit(rerun_sweep, p, root, workdir, bench, env, cwd, extra) for p in presets}
    return {p: f.result() for p, f in futures.items()}
