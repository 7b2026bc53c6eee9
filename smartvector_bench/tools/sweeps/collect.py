"""``smartvector-collect SWEEP_DIR``: one tidy table of a sweep of the main evaluation, with a per-preset summary.

Reads ``SWEEP_DIR/multirun.yaml`` (the multirun as Hydra planned it), rebuilds the full list of planned jobs
from ``hydra.sweeper.params`` and the recorded task overrides exactly as Hydra's basic sweeper expands them
(so a job that never ran is reported as missing, not silently absent), then every job folder's
``.hydra/overrides.yaml``, ``metrics.json`` and ``job_status.json``. Writes, atomically:

- ``tidy.csv``: one row per job x system x split (a job without usable metrics: one row, metrics empty);
- ``queries.csv``: one row per usable job x system x query, from the job's ``run_<system>.jsonl``: split,
  family, category, correct / stale / rumor (0/1; empty when not measured) and the top-1 confidence (empty when
  missing), so that paired tests pooled over seeds and calibration maps can be computed from the stored sweep
  alone;
- ``tidy.provenance.json``: schema version, sweep, preset, git sha(s), package versions, jobs by status, params;
- ``summary.json``: job counts, the failed and missing jobs, and what the preset needs (see ``summarise``).

The tables are pandas DataFrames (:func:`tidy_frame`, :func:`query_frame`, written with ``to_csv``) and the
summaries are groupbys over the tidy frame; the three files have the bytes the hand-written CSV code wrote
(recollecting a published sweep changes none of its files under ``results/``).

Prints a readable summary and exits 0 when every planned job is complete (run now or skipped as already
complete), 1 otherwise, 2 on bad input (not a sweep folder).

Job statuses: ``complete`` / ``skipped`` (usable metrics; ``skipped`` = the last run found them already
complete), ``failed`` (the job raised; its error is in job_status.json) and ``missing`` (no job folder, or a
folder without a usable metrics.json: killed, still running, or metrics deleted).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import pandas as pd

from smartvector_bench.core import SCHEMA_VERSION as BENCH_SCHEMA_VERSION
from smartvector_bench.core.atomic import atomic_write_json, atomic_write_text
from smartvector_bench.core.cli_errors import reports_bad_input
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.results.provenance import git_sha, package_versions
from smartvector_bench.core.results import RESULT_COLUMNS, SWEEP_SCHEMA_VERSION, TIDY, SweepSummary, system_rows
from smartvector_bench.tools.sweeps.jobs import Collection, JobResult, collect, rel, usable
from smartvector_bench.tools.sweeps.summary import summarise

SCHEMA_VERSION = SWEEP_SCHEMA_VERSION
PROG = "smartvector-collect"
TIDY_PROVENANCE = "tidy.provenance.json"
QUERIES = "queries.csv"
QUERY_COLUMNS = ("dataset_seed", "system", "query_id", "split", "family", "category", "correct", "stale", "rumor",
                 "confidence")
FLAGS = ("correct", "stale", "rumor")
SUMMARY = SweepSummary.FILE
JOB_COLUMNS = ("sweep", "job", "job_dir", "status", "overrides")


# --- tidy.csv and queries.csv: DataFrames --------------------------------------------------------------------

def _seed(r: JobResult) -> str:
    return str(r.job.swept.get("dataset.seed", (r.metrics.get("dataset") or {}).get("seed")))


def tidy_frame(c: Collection) -> pd.DataFrame:
    """tidy.csv as a DataFrame: one row per job x system x split (systems sorted; dev, test, then any other split
    sorted), one row with empty metrics for a job without usable metrics; the columns of tidy.csv in order, then
    two private ones for the summaries (``_seed``: the job's seed as a string; ``_label``: its swept overrides).

    The cells are the metrics.json values themselves (dtype object, nothing inferred): an int stays an int and a
    float keeps its repr, so ``to_csv`` writes the bytes tidy.csv has always had (no 70.0 for 70 in a column that
    also holds a failed job's empty cell)."""
    header = list(JOB_COLUMNS) + list(c.plan.swept_keys) + list(RESULT_COLUMNS)
    rows = []
    for r in c.results:
        job = {"sweep": c.sweep_dir.name, "job": r.job.num, "status": r.status, "overrides": " ".join(r.job.overrides),
               "job_dir": rel(r.folder, c.sweep_dir) if r.folder else (r.job.dirname or ""), **r.job.swept,
               "_label": r.job.label}
        if r.metrics is None:
            rows.append(job)
            continue
        rows += [job | {"_seed": _seed(r)} | row for row in system_rows(r.metrics)]
    return pd.DataFrame(rows, columns=[*header, "_seed", "_label"], dtype=object)


def query_frame(c: Collection) -> pd.DataFrame:
    """Per-query outcomes of every usable job, from its run files (see the module docstring); cells as in
    :func:`tidy_frame`, the three flags as 0/1."""
    header = ["job", "job_dir", *c.plan.swept_keys, *QUERY_COLUMNS]
    records = []
    for r in usable(c):
        base = {"job": r.job.num, "job_dir": rel(r.folder, c.sweep_dir), **r.job.swept,
                "dataset_seed": (r.metrics.get("dataset") or {}).get("seed")}
        for system in sorted(r.metrics["systems"]):
            path = r.folder / f"run_{system}.jsonl"
            if not path.is_file():  # a job folder trimmed by hand: its tidy rows stand, it has no query rows
                continue
            records += [base | {"system": system} | {k: q[k] for k in ("query_id", "split", *FLAGS)}
                        | {k: q.get(k) for k in ("family", "category", "confidence")}
                        for q in map(json.loads, path.read_text(encoding="utf-8").splitlines()[1:])]  # 1: header
    df = pd.DataFrame(records, columns=header, dtype=object)
    for flag in FLAGS:  # a null flag (not measured: the dataset has no such sets) stays an empty cell, never 0
        df[flag] = pd.Series([None if v is None else int(bool(v)) for v in df[flag]], index=df.index, dtype=object)
    return df


def _csv_text(df: pd.DataFrame) -> str:
    return df.to_csv(index=False, na_rep="", lineterminator="\n")


# --- provenance, writing, printing ---------------------------------------------------------------------------

def tidy_provenance(c: Collection, n_rows: int) -> dict:
    shas = sorted({str(((r.metrics.get("provenance") or {}).get("git") or {}).get("sha")) for r in usable(c)})
    dirty = sorted({((r.metrics.get("provenance") or {}).get("git") or {}).get("dirty") for r in usable(c)},
                   key=str)
    return {"schema_version": SCHEMA_VERSION, "bench_schema_version": BENCH_SCHEMA_VERSION,
            "sweep": c.sweep_dir.name, "sweep_dir": str(c.sweep_dir.resolve()), "preset": c.preset,
            "git_sha": shas[0] if len(shas) == 1 else shas, "git_dirty": dirty, "collector_git": git_sha(),
            "packages": package_versions(), "jobs": {"planned": len(c.plan.jobs), **c.by_status()},
            "rows": n_rows, "sweep_params": c.plan.params, "task_overrides": c.plan.task_overrides,
            "swept_keys": c.plan.swept_keys, "plan_exact": c.plan.exact, "notes": c.plan.notes,
            "collected_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _readable(path: Path) -> None:
    """atomic.py's temp files are created 0600; the sweep's tables are for everyone who may read the folder."""
    mask = os.umask(0)
    os.umask(mask)
    try:
        os.chmod(path, 0o666 & ~mask)
    except OSError:
        pass


def write_outputs(c: Collection) -> dict:
    t = tidy_frame(c)
    summary = summarise(c, t)
    atomic_write_text(c.sweep_dir / TIDY, _csv_text(t.drop(columns=["_seed", "_label"])))
    atomic_write_json(c.sweep_dir / TIDY_PROVENANCE, tidy_provenance(c, len(t)))
    summary.save(c.sweep_dir / SUMMARY)
    atomic_write_text(c.sweep_dir / QUERIES, _csv_text(query_frame(c)))
    for name in (TIDY, TIDY_PROVENANCE, SUMMARY, QUERIES):
        _readable(c.sweep_dir / name)
    return {"rows": len(t), "summary": summary.to_dict()}


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def report(c: Collection, summary: dict, n_rows: int) -> str:
    counts = summary["jobs"]
    lines = [(f"{PROG}: {c.sweep_dir} (preset {c.preset or '-'}): {counts['planned']} planned jobs: "
              f"{counts['complete']} complete, {counts['skipped']} skipped (already complete), "
              f"{counts['failed']} failed, {counts['missing']} missing")]
    for status in ("failed", "missing"):
        items = summary[status]
        if items:
            lines.append(f"{status} ({len(items)}):")
            lines += [f"  #{it['job']} {it['overrides']}  [{it['job_dir'] or '-'}]: {it['note']}" for it in items]
    if c.unplanned:
        lines.append(f"{len(c.unplanned)} job folder(s) not in this plan were ignored (an earlier sweep's)")
    body = summary["results"]
    if c.preset == "seeds" and body.get("systems"):
        lines.append("test top-1 mean (sd) over seeds " + ", ".join(body["seeds"]) + ":")
        for system, per in body["systems"].items():
            t = per["test"][M.TOP1]
            lines.append(f"  {system}: {_pct(t['mean'])} ({_pct(t['sd'])}), n={t['n']}")
    elif c.preset in ("contradiction_sweep", "ablation"):
        lines.append(f"test top-1 mean over seeds, by {body['key']}:")
        for v, per in body["by_value"].items():
            cells = ", ".join(f"{s} {_pct(m[M.TOP1]['mean'])}" for s, m in per.items())
            lines.append(f"  {v}: {cells or '-'}")
    elif c.preset == "tune" and body.get("winner"):
        w = body["winner"]
        lines.append(f"tune winner ({body['system']}, by dev top-1 {_pct(w['dev'][M.TOP1])}, "
                     f"{body['n_candidates']} of {body['n_planned']} jobs): {w['overrides']}")
        test = w["test"]
        lines.append(f"  test: top-1 {_pct(test[M.TOP1])} {test.get(M.ci(M.TOP1))}, "
                     f"ECE {test.get(M.ECE)}, stale {_pct(test.get(M.STALE_RATE))}")
        if not body["final"]:
            lines.append("  (provisional: not every planned job is complete)")
    elif c.preset == "half_life":
        g = body
        for system, per in g["systems"].items():
            lines.append(f"{system} test top-1: rows {g['rows']['key']}, columns {g['columns']['key']} "
                         f"({', '.join(g['columns']['values'])})")
            for v, row in zip(g["rows"]["values"], per[M.TOP1]):
                lines.append(f"  {v:>4}: " + " ".join(f"{_pct(x):>6}" for x in row))
    lines.append(f"wrote {c.sweep_dir / TIDY} ({n_rows} rows), {SUMMARY}, {TIDY_PROVENANCE}, {QUERIES}")
    return "\n".join(lines)


def run(sweep_dir: str | Path, quiet: bool = False) -> tuple[Collection, dict, int]:
    """Collect, write the three files, print the summary; returns (collection, summary, exit code)."""
    c = collect(sweep_dir)
    out = write_outputs(c)
    if not quiet:
        print(report(c, out["summary"], out["rows"]))
    return c, out["summary"], 0 if c.all_complete else 1


@reports_bad_input(PROG)
def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog=PROG, description="Collect a smartvector-bench multirun into tidy.csv and "
                                                        "summary.json; exit 0 if every planned job is complete.")
    ap.add_argument("sweep_dir", help="the multirun folder (holds multirun.yaml), e.g. multirun/seeds")
    ap.add_argument("-q", "--quiet", action="store_true", help="write the files, print nothing")
    args = ap.parse_args(argv)
    _, _, code = run(args.sweep_dir, quiet=args.quiet)
    sys.exit(code)


if __name__ == "__main__":
    main()
