"""The reduced reruns of the published sweeps: a sweep is never rerun whole in CI (27-128 jobs), so each preset
is rerun on a few of its own jobs (``gate_overrides`` in ``experiments/__init__.py`` narrow its swept keys on
the command line: Hydra 1.3's basic sweeper lets the command line win), the multirun the publication recorded
(``tidy.provenance.json``), into a temp folder sharing a private embedding cache. The publisher stores those
jobs' run files under ``results/<preset>/runs/<job_dir>/`` (``jobs_to_store``); each rerun job is matched to the
stored job with the same swept values, and its ranked lists compared with the stored ones (``rankings``)."""

from __future__ import annotations

import csv
import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from experiments import SWEEPS as SWEEP_PRESETS
from smartvector_bench.core.results import TIDY
from smartvector_bench.tools.sweeps.collect import JOB_COLUMNS, TIDY_PROVENANCE
from smartvector_bench.tools.gate.rerun import log_tail, run_logged

RUNS = "runs"  # results/<preset>/runs/<job_dir>/: the jobs the gate reruns, with their metrics.json and run files
REDUCED: dict[str, tuple[str, ...]] = {n: p.gate_overrides for n, p in SWEEP_PRESETS.items()}
SWEEPS = tuple(REDUCED)
# The sweeps `make regress` reruns unless asked by name: not those checked from results/ only (``regress=False``,
# e.g. regimes_facts, which needs the git bundles in ../shared/corpora as experiment=facts does).
RERUN_BY_DEFAULT = tuple(n for n, p in SWEEP_PRESETS.items() if p.regress)


def _norm(v) -> object:  # a swept value as tidy.csv and the command line write it: 0, 0.0 and "0" are one value
    return float(v) if str(v).replace(".", "", 1).lstrip("-").isdigit() else str(v)


def _key_of(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def tidy_jobs(path: Path) -> dict[tuple, str]:
    """(swept key, value) pairs of every job of a tidy.csv -> its job_dir."""
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        header, rows = list(reader.fieldnames or []), list(reader)
    swept = header[len(JOB_COLUMNS):header.index("system")] if "system" in header else []
    return {tuple((k, _norm(r.get(k))) for k in swept): r["job_dir"] for r in rows if r.get("job_dir")}


def jobs_to_store(preset: str, tidy: Path) -> list[str]:
    """The job_dirs of ``preset``'s published jobs that the gate reruns (its ``gate_overrides`` narrow the swept
    keys to these values); the publisher keeps their run files."""
    allowed = {_key_of(o): {_norm(v) for v in o.split("=", 1)[1].split(",")} for o in REDUCED[preset]}
    return sorted(d for key, d in tidy_jobs(tidy).items()
                  if all(v in allowed[k] for k, v in key if k in allowed))


def rerun_command(preset: str, folder: Path, sweep_dir: Path, cache: Path, bench: list[str]) -> list[str]:
    """The multirun the publication recorded (its task overrides in tidy.provenance.json, else the
    PROVENANCE.json command), narrowed by ``REDUCED[preset]`` into ``sweep_dir`` with a private cache."""
    recorded: list[str] = []
    for fname, key in ((TIDY_PROVENANCE, "task_overrides"), ("PROVENANCE.json", "command")):
        try:
            recorded = [str(x) for x in json.loads((folder / fname).read_text(encoding="utf-8")).get(key) or []
                        if str(x) not in ("-m", "smartvector-bench")]
        except (OSError, ValueError, AttributeError):
            recorded = []
        if recorded:
            break
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
    jobs: list[tuple[Path, Path | None]] = field(default_factory=list)  # (rerun job, stored job folder)


def rerun_sweep(preset: str, root: Path, workdir: Path, bench: list[str], env: dict,
                extra: tuple[str, ...] = (), timeout: float | None = None) -> SweepRerun:
    """One reduced rerun of ``preset``, each of its jobs paired with the stored job of ``root/<preset>/runs/``."""
    folder, r = Path(root) / preset, SweepRerun(preset)
    sweep_dir = Path(workdir) / preset
    shutil.rmtree(sweep_dir, ignore_errors=True)
    r.command = rerun_command(preset, folder, sweep_dir, Path(workdir) / "embeddings.sqlite", bench) + list(extra)
    log = Path(workdir) / f"{preset}.log"
    r.error, r.wall_time_s = run_logged(r.command, log, env, timeout)
    if r.error is None and not (sweep_dir / TIDY).is_file():
        r.error = f"{sweep_dir / TIDY} not written"
    if r.error is not None:
        r.error += ": " + log_tail(log, 6).replace("\n", " / ")
        return r
    stored = tidy_jobs(folder / TIDY)
    for key, job_dir in tidy_jobs(sweep_dir / TIDY).items():
        mine = folder / RUNS / stored[key] if key in stored else None
        r.jobs.append((sweep_dir / job_dir, mine if mine is not None and mine.is_dir() else None))
    return r


def rerun_sweeps(presets: list[str], root: Path, workdir: Path, bench: list[str], env: dict,
                 jobs: int = 1, extra: tuple[str, ...] = (),
                 per_preset: dict[str, list[str]] | None = None) -> dict[str, SweepRerun]:
    """``rerun_sweep`` of each preset, ``jobs`` at a time; ``per_preset``: more overrides for one preset."""
    Path(workdir).mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {p: pool.submit(rerun_sweep, p, root, workdir, bench, env,
                                  (*(per_preset or {}).get(p, ()), *extra)) for p in presets}
    return {p: f.result() for p, f in futures.items()}

