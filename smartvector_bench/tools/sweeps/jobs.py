"""What a sweep's job folders hold: each planned job matched to its folder (``.hydra/overrides.yaml``) and read
as complete, skipped, failed or missing (``metrics.json``, ``job_status.json``): :func:`collect`. A job whose
status says ``running`` but whose run is gone reads as interrupted (``resume.job_state``): counted missing, its
note saying so."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.results import MainMetrics
from smartvector_bench.core.results.sweep import STATUSES, USABLE
from smartvector_bench.tools.sweeps import STATUS_FILE
from smartvector_bench.tools.sweeps.plan import Plan, PlannedJob, _raw, folder_collisions, plan_jobs
from smartvector_bench.tools.sweeps.resume import describe_run, job_state, load_result, result_sha

METRICS_FILE = MainMetrics.FILE


class CollectError(BenchError):
    """Bad input to the collector (exit code 2)."""


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
    state = job_state(folder, record)
    if state == "failed":
        return JobResult(job, "failed", folder, status_record=record, note=str(record.get("error", "")))
    metrics = load_result(folder / METRICS_FILE)
    if metrics is None or not isinstance(metrics.get("systems"), dict):
        if state == "interrupted":
            note = f"interrupted: the run ({describe_run(record)}) stopped before writing metrics.json"
        elif state == "running":
            note = f"still running ({describe_run(record)})"
        else:
            note = "no metrics.json (killed before the end, or removed)"
        return JobResult(job, "missing", folder, status_record=record, note=note)
    if record and record.get("config_sha256") and record["config_sha256"] != result_sha(metrics):
        # e.g. a rerun with another configuration was killed: the metrics.json left is the earlier run's
        return JobResult(job, "missing", folder, status_record=record,
                         note="metrics.json is from another configuration than the job's last run "
                              f"(job_status.json: {state})")
    # complete / skipped; or `running` / interrupted with its own result written: killed between the two last writes
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


def rel(path: Path | None, base: Path) -> str:
    """``path`` relative to the sweep folder ("" for none)."""
    if path is None:
        return ""
    try:
        return str(path.relative_to(base))
    except ValueError:
        return str(path)


def usable(c: Collection) -> list[JobResult]:
    return [r for r in c.results if r.status in USABLE and r.metrics is not None]
