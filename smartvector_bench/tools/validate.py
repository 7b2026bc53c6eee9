"""Check a whole resolved config before anything runs or is written.

The CLI calls :func:`validate_config` first; each experiment module's ``validate(cfg)`` checks its own
``experiment.*`` keys and whatever sections it uses (systems, dataset, embedder), so a bad value stops the run
with one line naming the full key and what is allowed (exit 2), never after minutes of work and never leaving
files behind. The experiments' ``run`` functions call the same checks, so callers that skip the CLI get them too.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from smartvector_bench.core.errors import BenchError

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
    """``systems: all`` means every configured system: every ``retrievers.<name>`` with a ``_target_`` (so a
    variant such as ``smartvector_soft``, the same class with other settings, is a system of its own), in config
    order (smartvector_bench/systems/discovery.py)."""
    from smartvector_bench.systems import configured

    allowed = configured(cfg.get("retrievers"))
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
    from smartvector_bench.core.embedding import validate_embedder

    emb = cfg.get("embedder")
    if not isinstance(emb, dict):
        raise BenchError(f"embedder={emb!r}: must be a config group (embedder=minilm or embedder=hashing)")
    validate_embedder(dict(emb))


def check_retrievers(cfg: dict) -> None:
    """Every configured system, chosen or not, so no bad key is accepted silently: building one imports its
    ``_target_``, checks it is a Retriever and checks all of its keys (each class validates its own parameters)
    and loads nothing. A section without ``_target_`` is not a system (e.g. ``retrievers.smartvector.weights``
    alone, left by the weights group when ``retriever=[...]`` leaves smartvector out)."""
    from smartvector_bench.systems import build_retriever, configured

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


def check_systems_on(retrievers: dict, dataset) -> None:
    """Right after the dataset is loaded and before any text is embedded: a system that reads the labels
    (:class:`~.retrievers.base.ReadsLabels`) needs ``labels/``, and a system that checks the dataset
    (:class:`~.retrievers.base.ChecksDataset`) must accept it; one line naming the system, what it lacks, the
    dataset and the fix."""
    from smartvector_bench.systems.base import ChecksDataset, ReadsLabels

    for name, retriever in retrievers.items():
        if isinstance(retriever, ReadsLabels) and dataset.labels is None:
            raise BenchError(f"systems: {name} reads the ground-truth labels, but {dataset.path} has no labels/ "
                             f"folder; drop it from systems=")
        if isinstance(retriever, ChecksDataset):
            try:
                retriever.check_dataset(dataset.corpus)
            except BenchError as exc:
                msg = " ".join(str(exc).split())
                msg = msg[len("systems: "):] if msg.startswith("systems: ") else msg
                raise BenchError(f"systems: {msg} ({dataset.path}; drop {name} from systems=)") from None


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
