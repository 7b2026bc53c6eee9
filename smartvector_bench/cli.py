"""``smartvector-bench``: the Hydra app. Thin: it resolves the config, picks the experiment and calls its
plain ``run(cfg, out_dir)`` function."""

from __future__ import annotations

import importlib
import os

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from . import CONF_DIR
from .cli_errors import reports_bad_input
from .errors import BenchError

EXPERIMENTS = {"main": "experiments.main", "reembed_cost": "experiments.reembed_cost",
               "feedback_loop": "experiments.feedback_loop",
               "lvl_eval": "experiments.lvl_eval"}

if not OmegaConf.has_resolver("pid"):
    # Part of the run dir, so two runs started in the same microsecond still get separate folders.
    OmegaConf.register_new_resolver("pid", lambda: os.getpid(), use_cache=True)


def experiment_module(name: str):
    if name not in EXPERIMENTS:
        raise BenchError(f"experiment={name}: unknown; allowed: {', '.join(sorted(EXPERIMENTS))}")
    return importlib.import_module(EXPERIMENTS[name])


@reports_bad_input("smartvector-bench")
def bench(cfg: DictConfig) -> dict:
    container = OmegaConf.to_container(cfg, resolve=True)
    module = experiment_module(container["experiment"]["name"])
    out_dir = HydraConfig.get().runtime.output_dir
    result = module.run(container, out_dir)
    if container.get("print_table", True) and (table := os.path.join(out_dir, "table.md")) and os.path.exists(table):
        print(open(table, encoding="utf-8").read())
        print(f"outputs: {out_dir}")
    return result


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    bench(cfg)
