"""The experiments are declared once (``experiments/__init__.py``): conf/experiment/ and the declaration agree,
and the CLI, the config check, the publisher and the regression gate all read it."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml

from experiments import KINDS, PRESETS, RUNS, SWEEPS
from smartvector_bench.core import CONF_DIR
from smartvector_bench.tools import cli, publish, validate
from smartvector_bench.tools.gate import common, rerun, sweep_reruns, tolerances

from .conftest import REPO, compose_config

PRESET_FILES = sorted(p.stem for p in (Path(CONF_DIR) / "experiment").glob("*.yaml"))


def _sweeper_params(name: str) -> dict:
    raw = yaml.safe_load((Path(CONF_DIR) / "experiment" / f"{name}.yaml").read_text(encoding="utf-8")) or {}
    return ((raw.get("hydra") or {}).get("sweeper") or {}).get("params") or {}


def test_every_preset_file_is_declared_and_every_declared_preset_has_a_file():
    assert sorted(PRESETS) == PRESET_FILES
    assert list(PRESETS) == [*RUNS, *SWEEPS]


@pytest.mark.parametrize("name", PRESET_FILES)
def test_a_preset_runs_its_declared_kind_and_is_a_sweep_exactly_when_declared_so(name):
    preset = PRESETS[name]
    cfg = compose_config([f"experiment={name}"])
    assert cfg["experiment"]["name"] == preset.kind
    assert preset.kind in KINDS
    assert bool(_sweeper_params(name)) == preset.sweep
    if preset.sweep:  # a sweep names itself (its multirun folder and its summary are by preset)
        assert cfg["experiment"]["preset"] == name


@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_a_sweeps_reduced_rerun_narrows_its_own_swept_keys_to_values_it_sweeps(name):
    params = {k: [v.strip() for v in str(vals).split(",")] for k, vals in _sweeper_params(name).items()}
    assert SWEEPS[name].gate_overrides, name
    for override in SWEEPS[name].gate_overrides:
        key, values = override.split("=", 1)
        assert key in params, (name, key)
        assert set(values.split(",")) <= set(params[key]), (name, override)


def test_every_kind_names_a_module_with_validate_and_run():
    for kind in KINDS.values():
        module = importlib.import_module(kind.module)
        assert callable(module.validate) and callable(module.run), kind.name
        assert validate.experiment_module(kind.name) is module


def test_the_cli_the_config_check_the_publisher_and_the_gate_read_the_declaration():
    assert cli.EXPERIMENTS is KINDS and validate.EXPERIMENTS is KINDS
    assert publish.EXPERIMENTS is RUNS and common.EXPERIMENTS is RUNS
    assert sweep_reruns.REDUCED == {n: p.gate_overrides for n, p in SWEEPS.items()}
    assert rerun.GATE_RERUN_EXTRA == {"lvl_eval": ("experiment.repeats=1",)}
    # the gate's rules for experiments without run files are by kind
    assert set(tolerances.RANKING_DERIVED) <= set(KINDS)


def test_every_declared_preset_is_published():
    for name, preset in PRESETS.items():
        result = preset.result_file if not preset.sweep else "summary.json"
        assert (REPO / "results" / name / result).is_file(), name
