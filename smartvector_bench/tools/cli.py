"""``smartvector-bench``: the Hydra app. Thin: it resolves the config, validates all of it, picks the experiment
and calls its plain ``run(cfg, out_dir)`` function."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from experiments import KINDS as EXPERIMENTS  # noqa: F401 - re-exported: the experiments, declared once
from smartvector_bench.core import CONF_DIR
from smartvector_bench.systems import discovery
from smartvector_bench.core import scratch
from smartvector_bench.core.atomic import atomic_write_bytes
from smartvector_bench.core.cli_errors import hydra_entry, reports_bad_input, shown
from smartvector_bench.core.errors import BenchError
from smartvector_bench.tools.sweeps import STATUS_FILE, resume
from smartvector_bench.tools.validate import experiment_module, validate_config  # noqa: F401 - re-exported

# Importing .sweeps (above) registers ${svb_dirname:}, used by hydra.sweep.subdir, in every job process.

PROG = "smartvector-bench"

if not OmegaConf.has_resolver("pid"):
    # Part of the run dir, so two runs started in the same microsecond still get separate folders.
    OmegaConf.register_new_resolver("pid", lambda: os.getpid(), use_cache=True)


def _hydra_files(folder: Path) -> set[str]:
    """What Hydra itself writes into a run folder before the task starts."""
    return {p.name for p in folder.iterdir() if p.name == ".hydra" or (p.is_file() and p.suffix == ".log")} \
        if folder.is_dir() else set()


def discard_run_dir(out_dir: str | Path, before: set[str]) -> None:
    """After bad input in a single run: remove the run folder if it held nothing but Hydra's files before the
    job started, so a rejected config leaves nothing behind (a reused folder with other files is left alone)."""
    folder = Path(out_dir)
    if folder.is_dir() and not before:
        shutil.rmtree(folder, ignore_errors=True)


def _sweep_preset(hc) -> str | None:
    params = (hc.sweeper or {}).get("params") if hasattr(hc, "sweeper") else None
    return ", ".join(f"{k}={v}" for k, v in params.items()) if params else None


def _job(cfg: DictConfig) -> dict:
    """One run or sweep job. The run folder's lock comes first (one run per folder: a second run into it stops
    here, having written nothing; scratch.run_lock), then everything is validated; a job whose folder already
    holds a complete result for the same inputs, with its outputs unchanged, is skipped (sweeps/resume.py); every
    job records its status in ``job_status.json``; scratch files live under the run folder and are removed at
    the end (scratch.py)."""
    hc = HydraConfig.get()
    out_dir = hc.runtime.output_dir
    multirun = hc.mode == RunMode.MULTIRUN
    folder = Path(out_dir)
    before = {p.name for p in folder.iterdir()} - _hydra_files(folder) - {scratch.LOCK_FILE} \
        if folder.is_dir() else set()
    hint = f"wait for it or choose another {'hydra.sweep.dir' if multirun else 'hydra.run.dir'}"
    with scratch.run_lock(out_dir, hint):
        # Hydra writes .hydra/ before a job can take the lock, so a refused run overwrites the holder's files:
        # the holder puts its own back at the end.
        hydra_files = {p: p.read_bytes() for p in (folder / ".hydra").glob("*.yaml")}
        try:
            return _locked_job(cfg, hc, out_dir, multirun, before)
        finally:
            for path, data in hydra_files.items():
                if path.is_file() and path.read_bytes() != data:
                    atomic_write_bytes(path, data)


def check_retriever_group(choice, overrides=()) -> None:
    """One way to choose systems: ``systems=``. The ``retriever`` group always composes every retriever config on
    the search path (``retriever/all``), so a run's config holds every system and ``systems`` says which ran.
    ``choice`` is Hydra's ``runtime.choices.retriever``; ``overrides`` the command line's, to name the bad one."""
    if choice == discovery.ALL:
        return
    said = next((o for o in overrides if o.lstrip("+~").split("=")[0].split("@")[0] == discovery.GROUP),
                "a preset's `override /retriever`")
    raise BenchError(f"{said}: choose the systems to run with systems=[a,b] (or systems=all); the retriever group "
                     "always composes every retriever config found")


def _locked_job(cfg: DictConfig, hc, out_dir: str, multirun: bool, before: set[str]) -> dict:
    try:
        container = OmegaConf.to_container(cfg, resolve=True)
        sweep = None if multirun else _sweep_preset(hc)
        if sweep:
            name = (container.get("experiment") or {}).get("preset", "this preset")
            raise BenchError(f"experiment={name} is a sweep preset (over {sweep}); run it with -m: "
                             f"{PROG} -m experiment={name}")
        check_retriever_group(hc.runtime.choices.get(discovery.GROUP), list(hc.overrides.task))
        module = validate_config(container)
    except BaseException as exc:
        if multirun:
            resume.record_failure(out_dir, exc)
        elif isinstance(exc, (BenchError, OmegaConfBaseException)):
            discard_run_dir(out_dir, before - {STATUS_FILE})
        raise
    with scratch.job_scratch(out_dir):
        if multirun and "joblib" in str((hc.launcher or {}).get("_target_", "")):
            scratch.watch_parent()  # a worker dies with the sweep that started it
        try:
            result, skipped = resume.run_or_skip(out_dir, container, lambda: module.run(container, out_dir))
        except (BenchError, OmegaConfBaseException):
            if not multirun:
                discard_run_dir(out_dir, before - {STATUS_FILE})
            raise
    table = Path(out_dir) / "table.md"
    if not skipped and container.get("print_table", True) and table.exists():
        print(table.read_text(encoding="utf-8"))
        print(f"outputs: {out_dir}")
    return result


def bench(cfg: DictConfig) -> dict:
    if HydraConfig.get().mode == RunMode.MULTIRUN:
        # In a sweep a bad job must not end the sweep (sys.exit would): print the one-line error and let the
        # exception reach Hydra, which marks the job failed, runs the remaining jobs, then raises it.
        try:
            return _job(cfg)
        except (BenchError, OmegaConfBaseException) as exc:
            print(f"{PROG}: error: {shown(exc)}", file=sys.stderr)
            raise
    return reports_bad_input(PROG)(_job)(cfg)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def hydra_main(cfg: DictConfig) -> None:
    bench(cfg)


_entry = hydra_entry(PROG, hydra_main)


def main() -> None:
    """The console script: ``retriever/all`` is every retriever config on this command line's search path
    (conf/, ``--config-dir``, ``hydra.searchpath``; smartvector_bench/systems/discovery.py), then the Hydra app."""
    discovery.register_from_argv(sys.argv[1:], CONF_DIR, "config")
    _entry()
