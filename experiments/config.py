"""The config checks the experiments share: which systems a config chooses, and its dataset, embedder and
systems-against-the-dataset checks.

Each experiment module's ``validate(cfg)`` calls these for the sections it uses, and its ``run`` calls the same
checks, so a caller that skips the CLI gets them too; a bad value stops the run with one line naming the full
key and what is allowed (exit 2), before any work and before any file is written. The CLI's whole-config
check (top-level keys, every configured system, the experiment by name) is ``smartvector_bench/tools/validate.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from data_gen.params import params_from_config
from smartvector_bench.core.embedding import validate_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.settings import section
from smartvector_bench.systems import configured
from smartvector_bench.systems.base import ChecksDataset, ReadsLabels

DATASET_FOLDER = "a folder with corpus.jsonl, queries.jsonl, qrels/ and manifest.json"


@dataclass(frozen=True)
class ExperimentSettings:
    """The ``experiment.*`` keys the experiments share. A subclass gives ``name`` its experiment's default (the one
    value :func:`experiment_settings` accepts), may change the other defaults, and adds its own keys."""

    name: str = ""
    k: int = 10              # ranks kept per query
    n_boot: int = 1000       # bootstrap resamples of each interval
    bootstrap_seed: int = 0
    progress: bool = True    # progress bars on stderr


def experiment_settings(cls: type, exp: dict | None, nested: dict | None = None):
    """``cls`` (an :class:`ExperimentSettings`) from ``cfg["experiment"]``, every key checked by ``section``
    (errors name ``experiment.<key>``); ``experiment.name`` must be the class's own."""
    s = section(cls, exp, "experiment", nested=nested)
    own = cls.name  # the subclass default: a plain class attribute of the dataclass
    if s.name != own:
        raise BenchError(f"experiment.name={s.name}: this module runs {own} only")
    return s


def chosen_systems(cfg: dict) -> list[str]:
    """``systems: all`` means every configured system: every ``retrievers.<name>`` with a ``_target_`` (so a
    variant such as ``smartvector_soft``, the same class with other settings, is a system of its own), in config
    order (smartvector_bench/systems/discovery.py)."""
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
    params_from_config(dict(ds))


def check_embedder(cfg: dict) -> None:
    emb = cfg.get("embedder")
    if not isinstance(emb, dict):
        raise BenchError(f"embedder={emb!r}: must be a config group (embedder=minilm or embedder=hashing)")
    validate_embedder(dict(emb))


def check_systems_on(retrievers: dict, dataset) -> None:
    """Right after the dataset is loaded and before any text is embedded: a system that reads the labels
    (:class:`~smartvector_bench.systems.base.ReadsLabels`) needs ``labels/``, and a system that checks the dataset
    (:class:`~smartvector_bench.systems.base.ChecksDataset`) must accept it; one line naming the system, what it lacks, the
    dataset and the fix."""
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
