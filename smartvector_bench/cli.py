"""``smartvector-bench``: the Hydra app. Thin: it resolves the config, picks the experiment and calls its
plain ``run(cfg, out_dir)`` function."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from . import CONF_DIR
from .cli_errors import reports_bad_input
from .errors import BenchError
from .sweeps import resume

# Importing .sweeps (above) registers ${svb_dirname:}, used by hydra.sweep.subdir, in every job process.

EXPERIMENTS = {"main": "experiments.main", "reembed_cost": "experiments.reembed_cost",
               "feedback_loop": "experiments.feedback_loop",
               "lvl_eval": "experiments.lvl_eval", "shortcut_audit": "experiments.shortcut_audit"}

if not OmegaConf.has_resolver("pid"):
    # Part of the run dir, so two runs started in the same microsecond still get separate folders.
    OmegaConf.register_new_resolver("pid", lambda: os.getpid(), use_cache=True)


def experiment_module(name: str):
    if name not in EXPERIMENTS:
        raise BenchError(f"experiment={name}: unknown; allowed: {', '.join(sorted(EXPERIMENTS))}")
    return importlib.import_module(EXPERIMENTS[name])


def _job(cfg: DictConfig) -> dict:
    """One run or sweep job. A job whose folder already holds a complete result of the same resolved config is
    skipped (sweeps/resume.py); every job records its status in ``job_status.json``."""
    out_dir = HydraConfig.get().runtime.output_dir
    try:
        container = OmegaConf.to_container(cfg, resolve=True)
        module = experiment_module(container["experiment"]["name"])
    except BaseException as exc:
        resume.record_failure(out_dir, exc)
        raise
    result, skipped = resume.run_or_skip(out_dir, container, lambda: module.run(container, out_dir))
    table = Path(out_dir) / "table.md"
    if not skipped and container.get("print_table", True) and table.exists():
        print(table.read_text(encoding="utf-8"))
        print(f"outputs: {out_dir}")
    return result


def bench(cfg: DictConfig) -> dict:
    if HydraConfig.get().mode == RunMode.MULTIRUN:
        # In a sweep a bad job must not end the sweep (sys.exit would): print the one-line error and let the
        # exception reach Hydra, which marks the job failed, runs the remaining jobs, then exits non-zero.
        try:
            return _job(cfg)
        except (BenchError, OmegaConfBaseException) as exc:
            print(f"smartvector-bench: error: {exc}", file=sys.stderr)
            raise
    return reports_bad_input("smartvector-bench")(_job)(cfg)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    bench(cfg)
