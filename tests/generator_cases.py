"""The default profile's rendered files and dataset, shared by the generator tests (tests/test_generator_*.py):
composed and rendered once per module (the generator is deterministic)."""

from __future__ import annotations

import copy
import functools
import json

import pytest

from data_gen.params import params_from_config
from data_gen.writer import render_files
from smartvector_bench.core.dataset import load_dataset

from .conftest import compose_config


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


@functools.cache
def _base_cfg() -> dict:
    """The default ``dataset`` config, composed once (composing costs ~0.2 s); tests change keys of a copy."""
    return compose_config()["dataset"]


def _cfg(**changes) -> dict:
    cfg = copy.deepcopy(_base_cfg())
    cfg.update(changes)
    return cfg


@functools.cache
def _render_cached(changes: tuple) -> dict[str, str]:
    return render_files(params_from_config(_cfg(**dict(changes))))


def _render(**changes) -> dict[str, str]:
    """The rendered files of the default config with ``changes`` (cached: the generator is deterministic, and
    test_same_seed_and_config_give_byte_identical_files checks that without the cache)."""
    return _render_cached(tuple(sorted(changes.items())))


@pytest.fixture(scope="module")
def default_files() -> dict[str, str]:
    return _render()


@pytest.fixture(scope="module")
def corpus(default_files) -> dict[str, dict]:
    return {r["_id"]: r for r in _rows(default_files["corpus.jsonl"])}


@pytest.fixture(scope="module")
def queries(default_files) -> list[dict]:
    return _rows(default_files["queries.jsonl"])


@pytest.fixture(scope="module")
def families(default_files) -> dict[str, dict]:
    return {r["family"]: r for r in _rows(default_files["labels/families.jsonl"])}


@pytest.fixture(scope="module")
def ds(default_dataset):
    return load_dataset(default_dataset)
