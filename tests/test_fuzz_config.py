"""Fuzz the config surface: every leaf key of every experiment's resolved config, set to a bad value, is rejected
before any work by ``validate_config`` with one line naming the key; and through the real CLI (Hydra's parsing
and composition included) the contract is the same every time: exit 2, one line on stderr, nothing written."""

from __future__ import annotations

import contextlib
import copy
import io
import math
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from smartvector_bench.tools import cli
from smartvector_bench.core.errors import BenchError
from smartvector_bench.tools.validate import validate_config

from .conftest import compose_config

EXPERIMENTS = ("main", "feedback_loop", "reembed_cost", "lvl_eval", "shortcut_audit")
# Keys whose value is a free-form name or path (any string is a valid name; a path is checked when used).
FREE_TEXT = {"embedder.model", "embedder.hub_name", "embedder.cache_path", "dataset.path", "dataset.start",
             "experiment.preset", "experiment.lake_path"}
NOT_NUMBERS = ["abc", [1], {"a": 1}, True, None]


def _leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, (*path, str(k)))
    else:
        yield ".".join(path), node


def _configs() -> dict[str, dict]:
    return {name: compose_config([f"experiment={name}", "embedder=hashing"]) for name in EXPERIMENTS}


CONFIGS = _configs()
LEAVES = sorted({(exp, key, type(v).__name__) for exp, cfg in CONFIGS.items() for key, v in _leaves(cfg)
                 if not key.startswith("retrievers.") or exp == "main"})  # systems: once is enough


def _bad_values(kind: str, key: str) -> list:
    """Values that must be rejected for a leaf of this type."""
    if kind == "bool":
        return ["maybe", 2, 0.5, None, [True]]
    if kind == "int":
        return [math.inf, math.nan, -1, 10.5, *NOT_NUMBERS]
    if kind == "float":
        return [math.inf, -math.inf, math.nan, -1.0, *NOT_NUMBERS]
    if kind == "str" and key not in FREE_TEXT:
        return ["no_such_choice", 5, [], None]
    if kind == "list":
        return ["abc", 5, {"a": 1}]
    return []


CASES = [(exp, key, value) for exp, key, kind in LEAVES for value in _bad_values(kind, key)]
COUNTS: dict[str, int] = {}


def _set(cfg: dict, dotted: str, value) -> dict:
    out = copy.deepcopy(cfg)
    node = out
    *head, last = dotted.split(".")
    for part in head:
        node = node[part]
    node[last] = value
    return out


def _accepts(exp: str, key: str, value) -> bool:
    """The few bad-looking values some keys legitimately take (documented in their configs)."""
    if value is None and key in {"experiment.preset", "experiment.tune_system"}:
        return True
    if value is None and key.endswith(".consolidation.all_pairs_max"):
        return True  # null: all pairs at any size (conf/retriever/smartvector.yaml)
    return False


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CASES))
def _validate_search(case):
    exp, key, value = case
    COUNTS["validate"] = COUNTS.get("validate", 0) + 1
    cfg = _set(CONFIGS[exp], key, value)
    if _accepts(exp, key, value):
        validate_config(cfg)
        return
    with pytest.raises(BenchError) as err:
        validate_config(cfg)
    message = str(err.value)
    assert "\n" not in message
    leaf = key.split(".")[-1]
    assert leaf in message or key.rsplit(".", 1)[0] in message, (key, value, message)


def drawn(name: str, search, *args) -> None:
    """Runs the Hypothesis ``search`` and reports how many cases it drew (``pytest -s`` or ``-rA``); only this
    call's cases are counted, whatever ran before it."""
    before = COUNTS.get(name, 0)
    search(*args)
    n = COUNTS.get(name, 0) - before
    print(f"config fuzz ({name}): {len(CASES)} catalogued bad values over {len(LEAVES)} leaf keys; drawn: {n}")
    assert n > 0


@pytest.mark.slow
def test_every_bad_value_is_rejected_with_one_line_naming_the_key():
    drawn("validate", _validate_search)


def test_the_default_configs_validate():
    for cfg in CONFIGS.values():
        validate_config(cfg)
    assert len(CASES) > 300  # the catalogue covers the whole surface


# --- through the CLI (in process: Hydra's override parsing and composition, then the app) -------------------

def _run_cli(args: list[str], run_dir: Path) -> tuple[int, str]:
    argv, err = sys.argv, io.StringIO()
    sys.argv = ["smartvector-bench", *args, f"hydra.run.dir={run_dir}"]
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                cli.main()
                code = 0
            except SystemExit as exc:
                code = exc.code
    finally:
        sys.argv = argv
    return code, err.getvalue()


CLI_BAD = ["inf", "nan", "-inf", "-1", "abc", "[1,2]", "{a:1}", "true", "null", "10.5", "1e999", "''", "[",
           "${nosuch}", "\x00"]
CLI_KEYS = ["experiment.k", "experiment.n_boot", "experiment.ece_bins", "experiment.n_permutations",
            "experiment.baseline", "experiment.bootstrap_seed", "dataset.test_fraction", "dataset.n_families",
            "dataset.contradiction_rate", "dataset.seed", "dataset.versions", "embedder.dim",
            "retrievers.smartvector.temporal.half_life_days", "retrievers.smartvector.weights.semantic",
            "retrievers.bm25.k1", "retrievers.livevectorlake.hot_tier_size", "systems", "print_table",
            "experiment.nosuch_key", "nosuch_group.key"]


VALID = {("print_table", "true"), ("dataset.versions", "[1,2]"),  # the only valid pairs of the two lists
         ("retrievers.smartvector.temporal.half_life_days", "10.5"),
         ("retrievers.smartvector.weights.semantic", "10.5"), ("retrievers.bm25.k1", "10.5")}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(CLI_KEYS), value=st.sampled_from(CLI_BAD))
def _cli_search(tmp_path_factory, key, value):
    assume((key, value) not in VALID)
    base = tmp_path_factory.mktemp("fuzzcli")
    COUNTS["cli"] = COUNTS.get("cli", 0) + 1
    before = set(os.listdir(Path.cwd()))
    code, err = _run_cli(["embedder=hashing", f"{key}={value}"], base / "run")
    if code == 0:  # an accepted value must really be valid; none of these is, for these keys
        pytest.fail(f"{key}={value!r} was accepted")
    assert code == 2, (key, value, err)
    assert err.count("\n") == 1 and err.startswith("smartvector-bench: error: "), err
    assert not (base / "run").exists(), f"{key}={value!r} left {sorted(os.listdir(base / 'run'))}"
    assert set(os.listdir(Path.cwd())) == before


@pytest.mark.slow
def test_the_cli_contract_on_bad_overrides(tmp_path_factory):
    drawn("cli", _cli_search, tmp_path_factory)
