"""The plan of a sweep: every job Hydra was asked to run, rebuilt from ``multirun.yaml`` as its basic sweeper
expands ``hydra.sweeper.params`` and the recorded task overrides (so a job that never ran is reported as
missing, not silently absent), with the folder each job runs in."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf

from smartvector_bench.core import CONF_DIR
from smartvector_bench.tools.sweeps import register_resolvers

BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


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

    from smartvector_bench.systems.discovery import config_loader

    try:  # a config loader lets glob() sweeps over config groups expand (e.g. weights=glob(*))
        with config_loader(CONF_DIR) as loader:
            return OverridesParser.create(loader)
    except Exception:  # noqa: BLE001 - a plain parser still handles every other sweep
        return OverridesParser.create()


def expand(overrides: list) -> list[list[str]]:
    """Every job's overrides, as Hydra's basic sweeper expands parsed overrides (``BasicSweeper.split_arguments``
    with no batch size, rebuilt on the public ``Override`` API): a key's last override wins, in the place of its
    first; the cartesian product of each key's values, the first key outermost."""
    per_key: dict[str, list[str]] = {}
    for o in overrides:
        key = o.get_key_element()
        if o.is_sweep_override():
            if not o.is_discrete_sweep():
                raise ValueError(f"the basic sweeper does not support sweep type {o.value_type.name}: {o.input_line}")
            per_key[key] = [f"{key}={v}" for v in o.sweep_string_iterator()]
        else:
            per_key[key] = [f"{key}={o.get_value_element_as_str()}"]
    return [list(x) for x in itertools.product(*per_key.values())]


def overrides_dirname(overrides: list, exclude_keys: list[str], item_sep: str, kv_sep: str) -> str:
    """``hydra.job.override_dirname`` of parsed overrides, as Hydra's config loader writes it: the input lines of
    the keys not excluded, sorted, joined by ``item_sep``, every '=' written ``kv_sep``."""
    lines = sorted(o.input_line for o in overrides if o.key_or_group not in exclude_keys)
    return item_sep.join(lines).replace("=", kv_sep)


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
        self.root.hydra.job.num = num
        self.root.hydra.job.override_dirname = overrides_dirname(
            overrides=overrides, exclude_keys=self.exclude, item_sep=self.item_sep, kv_sep=self.kv_sep)
        try:
            return str(OmegaConf.select(self.root, "hydra.sweep.subdir", throw_on_resolution_failure=True))
        except Exception:  # noqa: BLE001 - a template that needs the job's own config: unknown in advance
            return None


def plan_jobs(cfg: DictConfig) -> Plan:
    """Every job of the multirun described by ``cfg`` (the master config, e.g. multirun.yaml), in Hydra's
    order, as the basic sweeper expands ``hydra.sweeper.params`` plus the command line's task overrides."""
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
    combos = expand(overrides)

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


def num_key(value: str) -> tuple:
    """The order a swept key's values are listed in: numbers by value (``"2" < "10"``), then any other value
    by its text. Shared by the collector's summaries and the gate's recomputation of them."""
    try:
        return (0, float(value), value)
    except (TypeError, ValueError):
        return (1, 0.0, str(value))
