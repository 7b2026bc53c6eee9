"""Check a whole resolved config before anything runs or is written.

The CLI calls :func:`validate_config` first: the top-level keys, every configured system, and then the chosen
experiment's own ``validate(cfg)``, which checks its ``experiment.*`` keys and whatever sections it uses
(systems, dataset, embedder) with the shared checks of ``experiments/config.py``. A bad value stops the run with
one line naming the full key and what is allowed (exit 2), never after minutes of work and never leaving files
behind. The experiments themselves are declared once, in ``experiments/__init__.py``.
"""

from __future__ import annotations

import importlib

from experiments import KINDS
from experiments.config import check_dataset, chosen_systems
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems import build_retriever, configured

EXPERIMENTS = KINDS  # experiment.name -> its module (validate(cfg), run(cfg, out_dir)) and outputs
TOP_LEVEL = ("dataset", "embedder", "retrievers", "systems", "print_table", "experiment")


def experiment_module(name: object):
    """The chosen experiment's module, imported by name: only that one (the others pull in pandas, Delta Lake,
    ...), and the CLI stays free of any experiment until the config names one."""
    if not isinstance(name, str) or name not in EXPERIMENTS:
        raise BenchError(f"experiment.name={name}: unknown; allowed: {', '.join(sorted(EXPERIMENTS))}")
    return importlib.import_module(EXPERIMENTS[name].module)


def check_top(cfg: dict) -> None:
    unknown = sorted(set(cfg) - set(TOP_LEVEL))
    if unknown:
        raise BenchError(f"{unknown[0]}: unknown top-level key; allowed: {', '.join(TOP_LEVEL)}")
    if not isinstance(cfg.get("print_table", True), bool):
        raise BenchError(f"print_table={cfg['print_table']!r}: must be true or false")
    if not isinstance(cfg.get("experiment"), dict):
        raise BenchError("experiment: missing; choose one with experiment=<name> "
                         f"(allowed: {', '.join(sorted(EXPERIMENTS))})")


def check_retrievers(cfg: dict) -> None:
    """Every configured system, chosen or not, so no bad key is accepted silently: building one imports its
    ``_target_``, checks it is a Retriever and checks all of its keys (each class validates its own parameters)
    and loads nothing. A section without ``_target_`` is not a system (e.g. ``retrievers.smartvector.weights``
    alone, left by the weights group in a composed config without smartvector)."""
    retrievers = cfg.get("retrievers")
    if not isinstance(retrievers, dict):
        raise BenchError(f"retrievers={retrievers!r}: must map system names to their configs")
    for name, rcfg in retrievers.items():
        if not isinstance(rcfg, dict):
            raise BenchError(f"retrievers.{name}={rcfg!r}: must be a config section")
        if "kind" in rcfg and "_target_" not in rcfg:
            build_retriever(name, rcfg)  # the one-line hint: kind was replaced by _target_
    for name in configured(retrievers):
        build_retriever(name, dict(retrievers[name]))


def validate_config(cfg: dict):
    """Check the whole config: top-level keys, every configured system, and what the chosen experiment uses
    (its ``experiment.*`` keys, dataset, embedder); returns the experiment's module."""
    check_top(cfg)
    module = experiment_module(cfg["experiment"].get("name"))
    check_retrievers(cfg)
    chosen_systems(cfg)
    check_dataset(cfg)  # also where the experiment brings its own datasets (shortcut_audit): nothing unchecked
    module.validate(cfg)
    return module
