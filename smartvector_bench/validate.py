"""Check a whole resolved config before anything runs or is written.

The CLI calls :func:`validate_config` first; each experiment module's ``validate(cfg)`` checks its own
``experiment.*`` keys and whatever sections it uses (systems, dataset, embedder), so a bad value stops the run
with one line naming the full key and what is allowed (exit 2), never after minutes of work and never leaving
files behind. The experiments' ``run`` functions call the same checks, so callers that skip the CLI get them too.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from .errors import BenchError

# experiment.name -> the module with its ``validate(cfg)`` and ``run(cfg, out_dir)``.
EXPERIMENTS = {"main": "experiments.main", "reembed_cost": "experiments.reembed_cost",
               "feedback_loop": "experiments.feedback_loop",
               "lvl_eval": "experiments.lvl_eval", "shortcut_audit": "experiments.shortcut_audit"}
TOP_LEVEL = ("dataset", "embedder", "retrievers", "systems", "print_table", "experiment")
DATASET_FOLDER = "a folder with corpus.jsonl, queries.jsonl, qrels/ and manifest.json"


def experiment_module(name: object):
    if not isinstance(name, str) or name not in EXPERIMENTS:
        raise BenchError(f"experiment.name={name}: unknown; allowed: {', '.join(sorted(EXPERIMENTS))}")
    return importlib.import_module(EXPERIMENTS[name])


def check_top(cfg: dict) -> None:
    unknown = sorted(set(cfg) - set(TOP_LEVEL))
    if unknown:
        raise BenchError(f"{unknown[0]}: unknown top-level key; allowed: {', '.join(TOP_LEVEL)}")
    if not isinstance(cfg.get("print_table", True), bool):
        raise BenchError(f"print_table={cfg['print_table']!r}: must be true or false")
    if not isinstance(cfg.get("experiment"), dict):
        raise BenchError("experiment: missing; choose one with experiment=<name> "
                         f"(allowed: {', '.join(sorted(EXPERIMENTS))})")


def chosen_systems(cfg: dict) -> list[str]:
    """``systems: all`` means every configured system whose ``kind`` (default: its name) is registered; so a
    variant (``smartvector_soft``: kind smartvector, other settings) is a system of its own."""
    from .retrievers import registered

    retrievers = cfg.get("retrievers") or {}
    configured = list(retrievers.keys())  # the order of conf/config.yaml's list
    known = registered()

    def kind(name):
        node = retrievers.get(name)
        return node.get("kind", name) if isinstance(node, dict) else name

    allowed = [s for s in configured if kind(s) in known]
    wanted = cfg.get("systems", "all")
    if wanted == "all":
        return allowed
    if isinstance(wanted, str):
        wanted = [wanted]
    if not isinstance(wanted, (list, tuple)) or not all(isinstance(x, str) for x in wanted):
        raise BenchError(f"systems={wanted!r}: must be all or a list of system names; allowed: {', '.join(allowed)}")
    if not wanted:
        raise BenchError(f"systems=[]: choose at least one; allowed: {', '.join(allowed)}")
    for name in wanted:
        if name not in allowed:
            raise BenchError(f"systems: unknown system {name!r}; allowed: {', '.join(allowed)}")
    if len(set(wanted)) != len(wanted):
        raise BenchError(f"systems={list(wanted)}: a system is listed twice")
    return list(wanted)


def check_dataset(cfg: dict) -> None:
    """``dataset.path`` must be an existing folder (its files are checked when loaded, before any write);
    otherwise every generator key is checked."""
    ds = cfg.get("dataset")
    if not isinstance(ds, dict):
        raise BenchError(f"dataset={ds!r}: must be a config group (dataset=versioned_policies, ...)")
    path = ds.get("path")
    if path is not None and path != "":
        if not isinstance(path, str):
            raise BenchError(f"dataset.path={path!r}: must be a folder path ({DATASET_FOLDER})")
        folder = Path(path)
        if not folder.exists():
            raise BenchError(f"dataset.path={path}: does not exist; expected {DATASET_FOLDER}")
        if not folder.is_dir():
            raise BenchError(f"dataset.path={path}: is a file, not a dataset folder; expected {DATASET_FOLDER}")
        return
    from data_gen.params import params_from_config

    params_from_config(dict(ds))


def check_embedder(cfg: dict) -> None:
    from .embedding import validate_embedder

    emb = cfg.get("embedder")
    if not isinstance(emb, dict):
        raise BenchError(f"embedder={emb!r}: must be a config group (embedder=minilm or embedder=hashing)")
    validate_embedder(dict(emb))


def check_retrievers(cfg: dict) -> None:
    """Every configured system, chosen or not, so no bad key is accepted silently: building one checks all of
    its keys (each retriever module validates its own config) and loads nothing."""
    from .retrievers import build_retriever, registered

    retrievers = cfg.get("retrievers")
    if not isinstance(retrievers, dict):
        raise BenchError(f"retrievers={retrievers!r}: must map system names to their configs")
    known = registered()
    for name, rcfg in retrievers.items():
        if not isinstance(rcfg, dict):
            raise BenchError(f"retrievers.{name}={rcfg!r}: must be a config section")
        kind = rcfg.get("kind", name)
        if kind not in known:
            raise BenchError(f"retrievers.{name}.kind={kind}: unknown; allowed: {', '.join(sorted(known))}")
        build_retriever(kind, dict(rcfg))


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
