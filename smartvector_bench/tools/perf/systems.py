"""Retriever configs for the perf cases: the benchmark's own defaults (``conf/``), composed with Hydra once."""

from __future__ import annotations

import copy
from functools import lru_cache

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from smartvector_bench.core import CONF_DIR


@lru_cache(maxsize=1)
def _retrievers() -> dict:
    if GlobalHydra.instance().is_initialized():  # inside a Hydra app (smartvector-perf): its search path is conf/
        return OmegaConf.to_container(compose("config"), resolve=True)["retrievers"]
    with initialize_config_dir(version_base="1.3", config_dir=CONF_DIR):
        return OmegaConf.to_container(compose("config"), resolve=True)["retrievers"]


def retriever_config(name: str, **overrides) -> dict:
    """The parameters of ``retrievers.<name>`` of the default config (its ``_target_`` left out: the class is
    called with them, ``Class(**cfg)``), with top-level keys replaced (nested dicts merged)."""
    cfg = copy.deepcopy(_retrievers()[name])
    cfg.pop("_target_", None)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            cfg[key] = {**cfg[key], **value}
        else:
            cfg[key] = value
    return cfg
