"""The reduced reruns of the published sweeps, for the regression gate (``python -m smartvector_bench.tools.gate``).

Why: a sweep is never rerun whole in CI (27-128 jobs), so each preset is rerun on a few of its own jobs, the same
multirun command it was published with, and those jobs' tidy rows must equal the committed ones.

``rerun_sweeps(presets, root, workdir, ...)``: each published preset in ``REDUCED`` (its ``gate_overrides``,
declared in ``experiments/__init__.py``) is rerun as a Hydra multirun with its sweeper params narrowed on the
command line (a swept key given on the command line replaces the preset's list: Hydra 1.3's basic sweeper lets
the command line win), with the task overrides the publication recorded (``tidy.provenance.json``), into a temp
folder, sharing a private embedding cache (a vector depends on its text alone). ``compare_tidy`` then matches
each rerun job to the committed job with the same swept values and compares every committed tidy.csv column per
system and split: metrics at 6 decimals up to one unit of the last (``paths.same_at_stored_precision``), p-values (``mcnemar_p``, ``permutation_p``) also on a log10 scale,
n_queries, dataset_sha256 and dataset_seed exactly. Not compared: the job bookkeeping columns, ``git_sha`` and
``config_sha256`` (another commit, another cache path). A committed sweep without the rerun job, or a column
missing from the rerun, is a miss; a preset not published is skipped with a note.

lvl_eval is rerun by the gate itself (``experiment.repeats=1``) and compared with the expected values of every
non-timing figure; see ``cli.py``.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments import SWEEPS as SWEEP_PRESETS
from smartvector_bench.core.metrics import names as M
from smartvector_bench.tools.gate.paths import P_LOG10_TOL, log10_close, same_at_stored_precision
from smartvector_bench.tools.gate.sweeps import DECIMALS, JOB_COLUMNS, TIDY, TIDY_PROVENANCE, USABLE, Check

P_COLUMNS = M.P_VALUES
EXACT_COLUMNS = ("dataset_sha256", "dataset_seed", M.N_QUERIES)
NOT_COMPARED = ("git_sha", "config_sha256")

# The reduced reruns: preset -> command-line overrides that narrow its sweeper params to a few of its own jobs.
REDUCED: dict[str, tuple[str, ...]] = {n: p.gate_overrides for n, p in SWEEP_PRESETS.items()}
SWEEPS = tuple(REDUCED)


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
                    ok = same_at_stored_precision(g, w)
                    why = f"differs at {DECIMALS} decimals by more than one unit"
                    if ok and col in P_COLUMNS:
                        ok, why = log10_close(g, w)
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
