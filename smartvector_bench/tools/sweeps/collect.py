"""``smartvector-collect SWEEP_DIR``: one tidy table of a sweep of the main evaluation, with a per-preset summary.

Reads ``SWEEP_DIR/multirun.yaml`` (the multirun as Hydra planned it), rebuilds the full list of planned jobs
from ``hydra.sweeper.params`` and the recorded task overrides exactly as Hydra's basic sweeper expands them
(so a job that never ran is reported as missing, not silently absent), then every job folder's
``.hydra/overrides.yaml``, ``metrics.json`` and ``job_status.json``. Writes, atomically:

- ``tidy.csv``: one row per job x system x split (a job without usable metrics: one row, metrics empty);
- ``queries.csv``: one row per usable job x system x query, from the job's ``run_<system>.jsonl``: split,
  family, category, correct / stale / rumor (0/1) and the top-1 confidence (empty when missing), so that
  paired tests pooled over seeds and calibration maps can be computed from the stored sweep alone;
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
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from smartvector_bench.core import SCHEMA_VERSION as BENCH_SCHEMA_VERSION
from smartvector_bench.core.atomic import atomic_write_json, atomic_write_text
from smartvector_bench.core.cli_errors import reports_bad_input
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.provenance import git_sha, package_versions
from smartvector_bench.tools.sweeps import STATUS_FILE, register_resolvers
from smartvector_bench.tools.sweeps.resume import load_result, result_sha

SCHEMA_VERSION = "1.0"
PROG = "smartvector-collect"
TIDY = "tidy.csv"
TIDY_PROVENANCE = "tidy.provenance.json"
QUERIES = "queries.csv"
QUERY_COLUMNS = ("dataset_seed", "system", "query_id", "split", "family", "category", "correct", "stale", "rumor",
                 "confidence")
FLAGS = ("correct", "stale", "rumor")
SUMMARY = "summary.json"
METRICS_FILE = "metrics.json"

STATUSES = ("complete", "skipped", "failed", "missing")
USABLE = ("complete", "skipped")
SPLITS = ("dev", "test")
CI_METRICS = ("top1", "stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5", "ndcg_at_10", "leakage_at_10")
SUMMARY_METRICS = ("top1", "stale_rate", "rumor_rate", "ece")
JOB_COLUMNS = ("sweep", "job", "job_dir", "status", "overrides")
RESULT_COLUMNS = (("system", "split", "n_queries")
                  + tuple(c for m in CI_METRICS for c in (m, f"{m}_lo", f"{m}_hi"))
                  + ("mcnemar_p", "permutation_p", "dataset_sha256", "dataset_seed", "git_sha", "config_sha256"))

BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


class CollectError(BenchError):
    """Bad input to the collector (exit code 2)."""


# --- the plan: which jobs Hydra was asked to run -------------------------------------------------------------

@dataclass
class PlannedJob:
    num: int                        # hydra.job.num
    overrides: list[str]            # as Hydra hands them to the job (= its .hydra/overrides.yaml)
    swept: dict[str, str]           # swept key -> this job's value (as written in the override)
    dirname: str | None             # the job folder, relative to the sweep folder (None: cannot be predicted)

    @property
    def key(self) -> tuple[str, ...]:
        return tuple(sorted(self.overrides))

    @property
    def label(self) -> str:
        """The swept part of the overrides, sorted: the job's name in reports and its tie-break string."""
        return ",".join(f"{k}={v}" for k, v in sorted(self.swept.items()))


@dataclass
class Plan:
    jobs: list[PlannedJob]
    swept_keys: list[str]           # in the order Hydra expands them
    params: dict[str, Any]          # hydra.sweeper.params
    task_overrides: list[str]       # the command line's task overrides
    exact: bool = True              # False: not the basic sweeper; the plan is what the job folders show
    notes: list[str] = field(default_factory=list)


def _parser():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:  # a config loader lets glob() sweeps over config groups expand (e.g. weights=glob(*))
        from hydra._internal.config_loader_impl import ConfigLoaderImpl
        from hydra._internal.utils import create_config_search_path

        from smartvector_bench.core import CONF_DIR

        return OverridesParser.create(ConfigLoaderImpl(config_search_path=create_config_search_path(CONF_DIR)))
    except Exception:  # noqa: BLE001 - a plain parser still handles every other sweep
        return OverridesParser.create()


def _raw(cfg: DictConfig, path: str) -> Any:
    """A value without resolving interpolations (None if absent)."""
    node = OmegaConf.select(cfg, path, default=None, throw_on_missing=False, throw_on_resolution_failure=False)
    if node is not None:
        return node
    parent, _, leaf = path.rpartition(".")
    holder = OmegaConf.select(cfg, parent, default=None) if parent else cfg
    if isinstance(holder, DictConfig) and leaf in holder:
        return holder._get_node(leaf)._value()  # an interpolation that cannot be resolved here: its text
    return None


class _Subdir:
    """Predicts each job's folder: ``hydra.sweep.subdir`` resolved with the job's num and override_dirname."""

    def __init__(self, hydra_cfg: DictConfig):
        oc = OmegaConf.select(hydra_cfg, "job.config.override_dirname", default=None)
        self.exclude = list(oc.exclude_keys) if oc is not None else []
        self.item_sep = str(oc.item_sep) if oc is not None else ","
        self.kv_sep = str(oc.kv_sep) if oc is not None else "="
        self.root = OmegaConf.create({"hydra": OmegaConf.to_container(hydra_cfg, resolve=False)})
        OmegaConf.set_struct(self.root, False)
        if OmegaConf.select(self.root, "hydra.job", default=None) is None:
            self.root.hydra.job = {}

    def __call__(self, num: int, overrides: list) -> str | None:
        from hydra._internal.config_loader_impl import get_overrides_dirname

        self.root.hydra.job.num = num
        self.root.hydra.job.override_dirname = get_overrides_dirname(
            overrides=overrides, exclude_keys=self.exclude, item_sep=self.item_sep, kv_sep=self.kv_sep)
        try:
            return str(OmegaConf.select(self.root, "hydra.sweep.subdir", throw_on_resolution_failure=True))
        except Exception:  # noqa: BLE001 - a template that needs the job's own config: unknown in advance
            return None


def plan_jobs(cfg: DictConfig) -> Plan:
    """Every job of the multirun described by ``cfg`` (the master config, e.g. multirun.yaml), in Hydra's
    order, as the basic sweeper expands ``hydra.sweeper.params`` plus the command line's task overrides."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper

    register_resolvers()
    hydra = cfg.hydra
    params = OmegaConf.to_container(hydra.sweeper.params, resolve=False) if OmegaConf.select(
        cfg, "hydra.sweeper.params", default=None) is not None else {}
    task = [str(x) for x in OmegaConf.to_container(hydra.overrides.task, resolve=False)]
    target = str(_raw(cfg, "hydra.sweeper._target_") or "")
    exact = target in ("", BASIC_SWEEPER)
    notes = [] if exact else [f"sweeper {target}: the plan is rebuilt as the basic sweeper would expand it"]
    parser = _parser()
    overrides = parser.parse_overrides([f"{k}={v}" for k, v in (params or {}).items()] + task)
    swept_keys: list[str] = []
    for o in overrides:
        if (o.is_sweep_override() or o.get_key_element() in (params or {})) and o.key_or_group not in swept_keys:
            swept_keys.append(o.key_or_group)
    combos = BasicSweeper.split_arguments(overrides, None)[0]

    subdir = _Subdir(hydra)
    jobs = []
    for num, combo in enumerate(combos):
        parsed = parser.parse_overrides(list(combo))
        swept = {o.key_or_group: o.get_value_element_as_str() for o in parsed if o.key_or_group in swept_keys}
        jobs.append(PlannedJob(num, list(combo), swept, subdir(num, parsed)))
    return Plan(jobs, swept_keys, dict(params or {}), task, exact, notes)


def folder_collisions(plan: Plan) -> list[tuple[str, list[int]]]:
    """Job folders that two or more planned jobs would share (a swept key in exclude_keys, for instance)."""
    by_dir: dict[str, list[int]] = {}
    for j in plan.jobs:
        if j.dirname is not None:
            by_dir.setdefault(j.dirname, []).append(j.num)
    return [(d, nums) for d, nums in by_dir.items() if len(nums) > 1]


# --- reading the job folders ---------------------------------------------------------------------------------

@dataclass
class JobResult:
    job: PlannedJob
    status: str
    folder: Path | None
    metrics: dict | None = None
    status_record: dict | None = None
    note: str = ""


def _job_folders(sweep_dir: Path) -> dict[tuple[str, ...], list[Path]]:
    """Every folder under the sweep that Hydra ran a job in, keyed by its sorted task overrides."""
    found: dict[tuple[str, ...], list[Path]] = {}
    for root, dirs, _files in os.walk(sweep_dir):
        here = Path(root)
        if ".hydra" in dirs and (here / ".hydra" / "overrides.yaml").is_file():
            try:
                ov = OmegaConf.to_container(OmegaConf.load(here / ".hydra" / "overrides.yaml"))
            except Exception:  # noqa: BLE001 - an unreadable file: the folder cannot be matched
                ov = None
            if isinstance(ov, list):
                found.setdefault(tuple(sorted(str(x) for x in ov)), []).append(here)
            dirs[:] = []  # job folders do not nest
            continue
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "dataset"]
    return found


def _pick_folder(job: PlannedJob, candidates: list[Path], sweep_dir: Path) -> Path:
    if len(candidates) == 1:
        return candidates[0]
    for c in candidates:  # the folder this plan names first, else the one touched last
        if job.dirname is not None and c == sweep_dir / job.dirname:
            return c
    return max(candidates, key=lambda c: max((p.stat().st_mtime for p in (c / METRICS_FILE, c / STATUS_FILE,
                                                                            c / ".hydra") if p.exists()),
                                             default=0.0))


def read_job(job: PlannedJob, folder: Path | None) -> JobResult:
    if folder is None:
        return JobResult(job, "missing", None, note="no job folder (never started)")
    record = load_result(folder / STATUS_FILE)
    state = (record or {}).get("status")
    if state == "failed":
        return JobResult(job, "failed", folder, status_record=record, note=str(record.get("error", "")))
    metrics = load_result(folder / METRICS_FILE)
    if metrics is None or not isinstance(metrics.get("systems"), dict):
        if state == "running":
            note = f"started {record.get('time_iso', '?')} (pid {record.get('pid')}) and left no metrics.json: " \
                   "killed, or still running"
        else:
            note = "no metrics.json (killed before the end, or removed)"
        return JobResult(job, "missing", folder, status_record=record, note=note)
    if record and record.get("config_sha256") and record["config_sha256"] != result_sha(metrics):
        # e.g. a rerun with another configuration was killed: the metrics.json left is the earlier run's
        return JobResult(job, "missing", folder, status_record=record,
                         note="metrics.json is from another configuration than the job's last run "
                              f"(job_status.json: {state})")
    # complete / skipped; or `running` with its own result written: killed between the two last writes
    return JobResult(job, state if state in USABLE else "complete", folder, metrics, record)


@dataclass
class Collection:
    sweep_dir: Path
    preset: str | None
    plan: Plan
    results: list[JobResult]
    unplanned: list[Path]
    experiment_cfg: dict

    def by_status(self) -> dict[str, int]:
        counts = {s: 0 for s in STATUSES}
        for r in self.results:
            counts[r.status] += 1
        return counts

    @property
    def all_complete(self) -> bool:
        return all(r.status in USABLE for r in self.results)


def load_sweep_config(sweep_dir: Path) -> DictConfig:
    path = sweep_dir / "multirun.yaml"
    if not sweep_dir.is_dir():
        raise CollectError(f"{sweep_dir}: not a folder")
    if not path.is_file():
        raise CollectError(f"{path}: not found; SWEEP_DIR must be the folder of a Hydra multirun "
                           f"(smartvector-bench -m ...)")
    try:
        cfg = OmegaConf.load(path)
    except Exception as exc:  # noqa: BLE001
        raise CollectError(f"{path}: not readable YAML ({exc})") from None
    if not isinstance(cfg, DictConfig) or OmegaConf.select(cfg, "hydra.overrides.task", default=None) is None:
        raise CollectError(f"{path}: no hydra.overrides.task; not a multirun.yaml written by Hydra")
    return cfg


def collect(sweep_dir: str | Path) -> Collection:
    sweep_dir = Path(sweep_dir)
    cfg = load_sweep_config(sweep_dir)
    try:
        plan = plan_jobs(cfg)
    except Exception as exc:  # noqa: BLE001 - e.g. an override the parser rejects
        raise CollectError(f"{sweep_dir / 'multirun.yaml'}: cannot rebuild the planned jobs ({exc})") from None
    preset = _raw(cfg, "experiment.preset")
    preset = str(preset) if preset is not None and "${" not in str(preset) else None
    experiment_cfg = OmegaConf.to_container(cfg.experiment, resolve=False) if "experiment" in cfg else {}
    folders = _job_folders(sweep_dir)
    results, used = [], set()
    for job in plan.jobs:
        cands = folders.get(job.key, [])
        folder = _pick_folder(job, cands, sweep_dir) if cands else None
        if folder is not None:
            used.add(folder)
        results.append(read_job(job, folder))
    for d, nums in folder_collisions(plan):
        for r in results:
            if r.job.num in nums and r.status in USABLE:
                r.note = f"shares its folder {d} with jobs {nums}"
    unplanned = sorted(p for ps in folders.values() for p in ps if p not in used)
    return Collection(sweep_dir, preset, plan, results, unplanned, experiment_cfg)


# --- tidy.csv and queries.csv: DataFrames --------------------------------------------------------------------

def _rel(path: Path | None, base: Path) -> str:
    if path is None:
        return ""
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def _ci(m: dict, key: str) -> tuple[Any, Any]:
    ci = m.get(f"{key}_ci")
    return (ci[0], ci[1]) if isinstance(ci, (list, tuple)) and len(ci) == 2 else (None, None)


def _seed(r: JobResult) -> str:
    return str(r.job.swept.get("dataset.seed", (r.metrics.get("dataset") or {}).get("seed")))


def system_rows(m: dict) -> list[dict]:
    """The rows of one metrics.json (experiment=main): one per system x split (systems sorted; dev, test, then any
    other split sorted), keyed by ``RESULT_COLUMNS`` (a metric's interval as ``<metric>_lo`` / ``_hi``)."""
    prov, ds = m.get("provenance") or {}, m.get("dataset") or {}
    common = {"dataset_sha256": ds.get("sha256"), "dataset_seed": ds.get("seed"),
              "git_sha": (prov.get("git") or {}).get("sha"), "config_sha256": prov.get("config_sha256")}
    rows = []
    for system, per_split in sorted(m["systems"].items()):
        per_split = per_split or {}
        for split in [s for s in SPLITS if s in per_split] + sorted(set(per_split) - set(SPLITS)):
            sm = per_split[split] or {}
            rows.append({"system": system, "split": split, **common}
                        | {k: sm.get(k) for k in ("n_queries", "mcnemar_p", "permutation_p", *CI_METRICS)}
                        | {f"{k}_{end}": v for k in CI_METRICS for end, v in zip(("lo", "hi"), _ci(sm, k))})
    return rows


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
               "job_dir": _rel(r.folder, c.sweep_dir) if r.folder else (r.job.dirname or ""), **r.job.swept,
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
    for r in _usable(c):
        base = {"job": r.job.num, "job_dir": _rel(r.folder, c.sweep_dir), **r.job.swept,
                "dataset_seed": (r.metrics.get("dataset") or {}).get("seed")}
        for system in sorted(r.metrics["systems"]):
            path = r.folder / f"run_{system}.jsonl"
            if not path.is_file():  # a job folder trimmed by hand: its tidy rows stand, it has no query rows
                continue
            records += [base | {"system": system} | {k: q[k] for k in ("query_id", "split", *FLAGS)}
                        | {k: q.get(k) for k in ("family", "category", "confidence")}
                        for q in map(json.loads, path.read_text(encoding="utf-8").splitlines()[1:])]  # 1: header
    df = pd.DataFrame(records, columns=header, dtype=object)
    df[list(FLAGS)] = df[list(FLAGS)].astype(bool).astype(int)
    return df


def _csv_text(df: pd.DataFrame) -> str:
    return df.to_csv(index=False, na_rep="", lineterminator="\n")


# --- summary.json: groupby over the tidy frame -----------------------------------------------------------------

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


def _usable(c: Collection) -> list[JobResult]:
    return [r for r in c.results if r.status in USABLE and r.metrics is not None]


def _stats(rows: pd.DataFrame, split: str, metrics=SUMMARY_METRICS) -> dict:
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
    return {"metrics": list(SUMMARY_METRICS), "seeds": sorted(set(u["_seed"]), key=_num_key),
            "systems": {system: {split: per_split[split][system] for split in SPLITS}
                        for system in sorted(set(u["system"]))}}


def summarise_by(c: Collection, t: pd.DataFrame, key: str, split: str = "test") -> dict:
    u = t[t["status"].isin(USABLE)]
    groups = {v: u[u[key] == v] for v in _values(c, key)}
    return {"key": key, "split": split, "metrics": list(SUMMARY_METRICS), "values": list(groups),
            "by_value": {v: _stats(g, split) if len(g) else {} for v, g in groups.items()}}


def summarise_tune(c: Collection, t: pd.DataFrame) -> dict:
    system = str((c.experiment_cfg or {}).get("tune_system", "smartvector"))
    dev = t[t["status"].isin(USABLE) & (t["system"] == system) & (t["split"] == "dev") & t["top1"].notna()]
    ranked = dev.assign(_mrr=dev["mrr_at_10"].map(lambda v: _py(v) or 0.0)).sort_values(
        ["top1", "_mrr", "_label"], ascending=[False, False, True], kind="stable")
    out = {"system": system, "selection": "highest dev top1; ties: higher dev mrr_at_10, then the smaller "
                                          "override string; the winner's test figures are the result",
           "n_candidates": len(dev), "n_planned": len(c.plan.jobs), "final": len(dev) == len(c.plan.jobs),
           "winner": None, "dev_top5": [{"job": row["job"], "overrides": row["_label"], "dev_top1": row["top1"],
                                         "dev_mrr_at_10": _py(row["mrr_at_10"])}
                                        for row in ranked.head(5).to_dict("records")]}
    if len(ranked):
        best = next(r for r in c.results if r.job.num == ranked["job"].iloc[0])
        test = ((best.metrics["systems"].get(system) or {}).get("test")) or {}
        cfg = (best.metrics.get("provenance") or {}).get("config") or {}
        weights = ((cfg.get("retrievers") or {}).get(system) or {}).get("weights")
        dev_best = ranked.iloc[0]
        out["winner"] = {"job": best.job.num, "job_dir": _rel(best.folder, c.sweep_dir),
                         "overrides": best.job.label, "swept": best.job.swept, "weights": weights,
                         "dev": {"top1": dev_best["top1"], "mrr_at_10": _py(dev_best["mrr_at_10"])},
                         "test": {k: test.get(k) for k in ("n_queries", *CI_METRICS, "mcnemar_p")}
                         | {f"{k}_ci": test.get(f"{k}_ci") for k in CI_METRICS}}
    return out


def summarise_grid(c: Collection, t: pd.DataFrame, row_key: str, col_key: str, split: str = "test",
                   metrics=("top1", "ece")) -> dict:
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


def _num_key(s: str):
    try:
        return (0, float(s), s)
    except (TypeError, ValueError):
        return (1, 0.0, str(s))


HALF_LIFE = ("retrievers.smartvector.temporal.half_life_days", "retrievers.smartvector.confidence.half_life_days")


def summarise(c: Collection, t: pd.DataFrame | None = None) -> dict:
    """What each preset needs, from the tidy frame ``t`` (:func:`tidy_frame`, built if not given):

    - seeds: per system and split, mean / sample sd / per-seed values of top1, stale_rate, rumor_rate, ece;
    - contradiction_sweep: per contradiction rate and system, mean / sd over seeds on test;
    - ablation: per weights preset and system, mean / sd over seeds on test;
    - tune: the winning weights by dev top-1 and their test figures, and the dev top-5;
    - half_life: test top1 and ECE grids (temporal half-life rows x confidence half-life columns);
    - anything else: per value of each swept key, mean / sd on test.
    """
    t = tidy_frame(c) if t is None else t
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
    return {"schema_version": SCHEMA_VERSION, "sweep": c.sweep_dir.name, "preset": preset,
            "jobs": {"planned": len(c.plan.jobs), **counts}, "all_complete": c.all_complete,
            "failed": [_job_line(r, c) for r in c.results if r.status == "failed"],
            "missing": [_job_line(r, c) for r in c.results if r.status == "missing"],
            "unplanned_folders": [_rel(p, c.sweep_dir) for p in c.unplanned],
            "results": body}


def _job_line(r: JobResult, c: Collection) -> dict:
    return {"job": r.job.num, "job_dir": _rel(r.folder, c.sweep_dir) if r.folder else r.job.dirname,
            "overrides": r.job.label or " ".join(r.job.overrides), "note": r.note}


# --- provenance, writing, printing ---------------------------------------------------------------------------

def tidy_provenance(c: Collection, n_rows: int) -> dict:
    shas = sorted({str(((r.metrics.get("provenance") or {}).get("git") or {}).get("sha")) for r in _usable(c)})
    dirty = sorted({((r.metrics.get("provenance") or {}).get("git") or {}).get("dirty") for r in _usable(c)},
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
    atomic_write_json(c.sweep_dir / SUMMARY, summary)
    atomic_write_text(c.sweep_dir / QUERIES, _csv_text(query_frame(c)))
    for name in (TIDY, TIDY_PROVENANCE, SUMMARY, QUERIES):
        _readable(c.sweep_dir / name)
    return {"rows": len(t), "summary": summary}


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
            t = per["test"]["top1"]
            lines.append(f"  {system}: {_pct(t['mean'])} ({_pct(t['sd'])}), n={t['n']}")
    elif c.preset in ("contradiction_sweep", "ablation"):
        lines.append(f"test top-1 mean over seeds, by {body['key']}:")
        for v, per in body["by_value"].items():
            cells = ", ".join(f"{s} {_pct(m['top1']['mean'])}" for s, m in per.items())
            lines.append(f"  {v}: {cells or '-'}")
    elif c.preset == "tune" and body.get("winner"):
        w = body["winner"]
        lines.append(f"tune winner ({body['system']}, by dev top-1 {_pct(w['dev']['top1'])}, "
                     f"{body['n_candidates']} of {body['n_planned']} jobs): {w['overrides']}")
        lines.append(f"  test: top-1 {_pct(w['test']['top1'])} {w['test'].get('top1_ci')}, "
                     f"ECE {w['test'].get('ece')}, stale {_pct(w['test'].get('stale_rate'))}")
        if not body["final"]:
            lines.append("  (provisional: not every planned job is complete)")
    elif c.preset == "half_life":
        g = body
        for system, per in g["systems"].items():
            lines.append(f"{system} test top-1: rows {g['rows']['key']}, columns {g['columns']['key']} "
                         f"({', '.join(g['columns']['values'])})")
            for v, row in zip(g["rows"]["values"], per["top1"]):
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
