"""Reruns through the real CLI, shared by the gate and the publisher (``smartvector_bench/tools/publish.py``):
``smartvector-bench experiment=<name>`` into a fixed ``hydra.run.dir``, the same command and environment the
publisher records in each ``results/<name>/PROVENANCE.json``, several at a time in separate processes, each in a
session of its own that SIGTERM or SIGINT to the gate or the publisher stops (``children.py``)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from smartvector_bench.core.results import ResultError
from smartvector_bench.tools.gate import children
from smartvector_bench.tools.gate.common import EXPERIMENTS, REPO, read_result

# The default config with the real model; no embedding cache (a warm cache would hide a model or torch change).
RERUN_OVERRIDES = ("embedder.cache_path=null", "print_table=false")
# One math thread per run: the vectors do not depend on it (one forward pass per text on one thread,
# core/embedding.py), and two runs side by side (--jobs 2) then do not oversubscribe two cores.
RERUN_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1",
             "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
DEFAULT_JOBS = max(1, min(2, os.cpu_count() or 1))
# Overrides of the gate's reruns only (the publisher runs the defaults): each preset's ``gate_overrides``.
GATE_RERUN_EXTRA = {n: p.gate_overrides for n, p in EXPERIMENTS.items() if p.gate_overrides}


def bench_executable() -> list[str]:
    """The ``smartvector-bench`` console script of the running interpreter's environment."""
    exe = Path(sys.executable).parent / "smartvector-bench"
    found = str(exe) if exe.exists() else shutil.which("smartvector-bench")
    return [found] if found else [sys.executable, "-c", "import sys; from smartvector_bench.tools.cli import main; "
                                  "sys.argv[0] = 'smartvector-bench'; main()"]


def rerun_command(name: str, run_dir: Path, extra: tuple[str, ...] | list[str] = ()) -> list[str]:
    return [*bench_executable(), f"experiment={name}", f"hydra.run.dir={run_dir}", *RERUN_OVERRIDES, *extra]


def log_tail(log: Path, n: int = 15) -> str:
    """The last ``n`` non-blank lines of a run's log (progress bars' carriage returns as line breaks)."""
    text = Path(log).read_text(encoding="utf-8", errors="replace") if Path(log).is_file() else ""
    return "\n".join([ln for ln in text.replace("\r", "\n").splitlines() if ln.strip()][-n:])


def run_logged(command: list[str], log: Path, env: dict, timeout: float | None = None) -> tuple[str | None, float]:
    """Run ``command`` from the repository with ``env`` added, its output into ``log``: (why it failed or None,
    wall time). Never raises for a failed run. The child runs in its own session and stops with the gate
    (``children.py``); once the gate is interrupted, none starts."""
    t0, error = time.perf_counter(), None
    if children.stopping():
        return "not started: interrupted", 0.0
    try:
        with open(log, "w", encoding="utf-8") as fh:
            code = children.run(command, timeout=timeout, cwd=REPO, env={**os.environ, **env}, stdout=fh,
                                stderr=subprocess.STDOUT)
        error = "not started: interrupted" if code is None else f"exit code {code}" if code else None
    except subprocess.TimeoutExpired:
        error = f"timed out after {timeout:g} s"
    except OSError as exc:
        error = f"could not start {command[0]}: {exc}"
    return error, time.perf_counter() - t0


@dataclass
class Rerun:
    name: str
    command: list[str]
    run_dir: Path
    log: Path
    wall_time_s: float = 0.0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def log_tail(self, n: int = 15) -> str:
        return log_tail(self.log, n)


def rerun(name: str, workdir: Path, extra: tuple[str, ...] | list[str] = (), timeout: float | None = None) -> Rerun:
    """Run one experiment through the CLI into ``workdir/<name>`` (a fixed ``hydra.run.dir``); its output,
    progress bars included, goes to ``workdir/<name>.log``. Never raises for a failed run: see ``.error``."""
    run_dir = Path(workdir) / name
    shutil.rmtree(run_dir, ignore_errors=True)
    r = Rerun(name, rerun_command(name, run_dir, extra), run_dir, Path(workdir) / f"{name}.log")
    r.error, r.wall_time_s = run_logged(r.command, r.log, RERUN_ENV, timeout)
    if r.error is None:
        try:
            read_result(name, run_dir / EXPERIMENTS[name].result_file)
        except ResultError as exc:
            r.error = f"bad result file after a zero exit: {exc}"
    return r


def rerun_many(names: list[str], workdir: Path, jobs: int = 1, extra: tuple[str, ...] | list[str] = (),
               per_name: dict[str, tuple[str, ...]] | None = None) -> dict[str, Rerun]:
    """Rerun several experiments, ``jobs`` at a time (each in its own process); ``per_name``: more overrides
    of one experiment."""
    Path(workdir).mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {n: pool.submit(rerun, n, workdir, (*(per_name or {}).get(n, ()), *extra)) for n in names}
    return {n: f.result() for n, f in futures.items()}


def add_rerun_options(ap: argparse.ArgumentParser, keep_help: str, set_help: str) -> None:
    """``--jobs``, ``--keep DIR`` and ``--set KEY=VALUE``: the options of every command that reruns experiments."""
    ap.add_argument("--jobs", type=int, default=DEFAULT_JOBS,
                    help=f"experiments rerun at the same time (default {DEFAULT_JOBS}: min(2, cores))")
    ap.add_argument("--keep", type=Path, metavar="DIR", help=keep_help)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides", help=set_help)
