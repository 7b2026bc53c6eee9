"""The config checks the experiments share: which systems a config chooses, and its dataset, embedder and
systems-against-the-dataset checks.

Each experiment module's ``validate(cfg)`` calls these for the sections it uses, and its ``run`` calls the same
checks, so a caller that skips the CLI gets them too; a bad value stops the run with one line naming the full
key and what is allowed (exit 2), before any work and before any file is written. The CLI's whole-config
check (top-level keys, every configured system, the experiment by name) is ``smartvector_bench/tools/validate.py``.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from data_gen.params import params_from_config
from smartvector_bench.core.dataset.regimes import DEFAULT_REGIME, NoiseSettings, regime_settings
from smartvector_bench.core.embedding import validate_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.settings import section
from smartvector_bench.systems import configured
from smartvector_bench.systems.base import ChecksDataset, ReadsLabels

DATASET_FOLDER = "a folder with corpus.jsonl, queries.jsonl, qrels/ and manifest.json"

# Static caps, checked with the other experiment.* keys before any data is read (``MAXIMUM`` of settings.section);
# check_data_bounds and check_resampling then bound them by the dataset and the machine.
MAXIMUM = {
    "k": 10_000,                  # ranks kept per query: every metric reads ten; a deeper list only costs memory
    "ece_bins": 10_000,           # equal-width bins on [0, 1], each one stored in metrics.json
    "n_boot": 100_000,            # bootstrap resamples: a 95% bound moves by < 0.1 point past 10,000
    "n_permutations": 1_000_000,  # Monte Carlo sign patterns (the 2**families patterns when fewer: exact)
}
# The cost of resampling, measured once on the publishing machine (2 cores; docs/operations.md, "Bounds").
BOOT_BYTES = 24         # per resample and cluster: the (n_boot, clusters) int64 draws and the gathered float64 sums
                        # and counts of the vectorised mean (tracemalloc: 16-19 B)
PERM_BYTES = 80         # per sign pattern and cluster: scipy's permutation_test holds every pattern (72 B)
EVAL_RESAMPLE_S = 1.2e-3  # one resample of every interval of one system's evaluation (experiment=main: the ECE,
EVAL_QUERY_S = 2e-7       # Brier, AUROC, leakage and calibration statistics run in Python), plus this per query:
                          # 1.2 ms with 138 queries, 1.4 ms with 1,150
VECTOR_S = 2e-8         # per resample and unit of one vectorised mean interval (lvl_eval, reembed_cost)
PERM_S = 1e-7           # per sign pattern and cluster of one permutation test
TIME_BUDGET_S = 3600.0  # longer resampling is refused; past a minute its estimate is printed
MEMORY_SHARE = 0.5      # of the memory available at run time; the rest is for the data, the index and the model


@dataclass(frozen=True)
class ExperimentSettings:
    """The ``experiment.*`` keys the experiments share. A subclass gives ``name`` its experiment's default (the one
    value :func:`experiment_settings` accepts), may change the other defaults, and adds its own keys."""

    MAXIMUM = MAXIMUM

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
    """``dataset.metadata`` / ``dataset.metadata_noise`` (:func:`check_regime`); then ``dataset.path`` must be an
    existing folder (its files are checked when loaded, before any write); otherwise every generator key is
    checked."""
    ds = cfg.get("dataset")
    if not isinstance(ds, dict):
        raise BenchError(f"dataset={ds!r}: must be a config group (dataset=versioned_policies, ...)")
    check_regime(cfg)
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


# The experiments that serve the retrievers a rewritten corpus (dataset.metadata); the others refuse a regime.
REGIME_EXPERIMENTS = ("main",)


def check_regime(cfg: dict) -> tuple[str, NoiseSettings]:
    """``dataset.metadata`` (full, no_valid_to, created_only, noisy) and ``dataset.metadata_noise``, each key
    checked; a regime other than ``full`` only for experiment=main (smartvector_bench/core/dataset/regimes.py)."""
    regime, noise = regime_settings(cfg.get("dataset"))
    experiment = (cfg.get("experiment") or {}).get("name", "main")
    if regime != DEFAULT_REGIME and experiment not in REGIME_EXPERIMENTS:
        raise BenchError(f"dataset.metadata={regime}: experiment={experiment} runs on the full metadata only (the "
                         f"regimes are for experiment={' / '.join(REGIME_EXPERIMENTS)}); drop dataset.metadata")
    return regime, noise


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


# -- resource bounds ---------------------------------------------------------------------------------------------

def check_data_bounds(s, dataset) -> None:
    """Right after the dataset is loaded, before anything is embedded: ``experiment.k`` at most the corpus size
    and ``experiment.ece_bins`` at most the number of judged queries (at least their defaults stay allowed: a
    short ranked list is padded, an empty bin costs nothing)."""
    for key, n, what, unit in (("k", len(dataset.corpus), "the corpus size", "chunks"),
                               ("ece_bins", len(dataset.queries), "the number of judged queries", "queries")):
        value = getattr(s, key, None)
        if value is None:
            continue
        top = max(n, getattr(type(s), key))
        if value > top:
            low = getattr(type(s), "MINIMUM", {}).get(key, 1)
            raise BenchError(f"experiment.{key}={value}: at most {what} ({n} {unit} in {dataset.path}); "
                             f"allowed: {low}..{top}")


def available_memory() -> int | None:
    """Bytes this process may still allocate: Linux's MemAvailable (else the free physical pages), within what is
    left under an address-space limit (ulimit -v); None when unknown."""
    avail = None
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            avail = next((int(ln.split()[1]) * 1024 for ln in f if ln.startswith("MemAvailable:")), None)
    except OSError:
        pass
    if avail is None:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, OSError, ValueError):
            pass
    import resource  # POSIX only, like the rest of the measurements here

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit != resource.RLIM_INFINITY:
        try:
            with open("/proc/self/status", encoding="ascii") as f:
                used = next((int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmSize:")), 0)
        except OSError:
            used = 0
        avail = max(0, limit - used) if avail is None else min(avail, max(0, limit - used))
    return avail


def _bytes(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def _seconds(t: float) -> str:
    return f"{t:.0f} s" if t < 120 else f"{t / 60:.0f} min" if t < 7200 else f"{t / 3600:.1f} h"


def check_resampling(s, clusters: int, per_resample_s: float, tests: int = 0, what: str = "") -> float:
    """Before any work: the memory and time ``experiment.n_boot`` (and ``n_permutations``, over ``tests`` paired
    permutation tests) will take, from the cost model above: ``clusters`` units resampled (families, or queries
    when there are none), ``per_resample_s`` seconds per bootstrap resample of the whole run, and ``what`` the
    run's size in words. Over half the available memory or :data:`TIME_BUDGET_S` is refused in one line naming the
    key, the estimate and the values allowed here; past a minute the estimate is printed. Returns the seconds."""
    n_perm = getattr(s, "n_permutations", 0) if tests else 0
    patterns = min(n_perm, 2 ** min(clusters, 64))  # an exact test enumerates its 2**clusters patterns
    costs = {"n_boot": (s.n_boot, s.n_boot, BOOT_BYTES * clusters, per_resample_s),
             "n_permutations": (n_perm, patterns, PERM_BYTES * clusters, tests * PERM_S * clusters)}
    spent = {key: count * per_s for key, (_, count, _, per_s) in costs.items()}
    total_s = sum(spent.values())
    slowest = max(spent, key=spent.get)
    memory = available_memory()
    for key, (value, count, per_bytes, per_s) in costs.items():
        fits = [MAXIMUM[key], int((TIME_BUDGET_S - total_s + spent[key]) / per_s + 1e-9) if per_s else MAXIMUM[key]]
        if memory is not None and per_bytes:
            fits.append(int(memory * MEMORY_SHARE // per_bytes))
        allowed = f"allowed here: 1..{max(1, min(fits))}"
        if value and memory is not None and count * per_bytes > memory * MEMORY_SHARE:
            raise BenchError(f"experiment.{key}={value}: needs about {_bytes(count * per_bytes)} of memory ({what}), "
                             f"more than half the {_bytes(memory)} available; {allowed}")
        if value and total_s > TIME_BUDGET_S and key == slowest:
            raise BenchError(f"experiment.{key}={value}: about {_seconds(total_s)} of resampling ({what}), over the "
                             f"{_seconds(TIME_BUDGET_S)} budget; {allowed}")
    if total_s > 60:
        keys = f"experiment.n_boot={s.n_boot}" + (f", experiment.n_permutations={n_perm}" if n_perm else "")
        print(f"{keys}: resampling takes about {_seconds(total_s)} ({what}; estimate)", file=sys.stderr)
    return total_s


def check_evaluation_bounds(s, dataset, systems: int, passes: int = 1, tests: bool = True) -> None:
    """experiment=main's bounds, for any experiment that scores runs with ``evaluate_split`` (``passes``
    evaluations of ``systems`` systems; ``tests``: with the paired permutation tests, one per system and split):
    :func:`check_data_bounds`, then :func:`check_resampling`. Call it right after the dataset is loaded."""
    check_data_bounds(s, dataset)
    q = dataset.queries
    n = len(q)
    split, family = np.asarray(q.split).astype(str), np.asarray(q.family, dtype=object)
    families = max(len(set(family[split == name].tolist())) for name in set(split.tolist()))  # resampled per split
    check_resampling(s, families, passes * systems * (EVAL_RESAMPLE_S + EVAL_QUERY_S * n),
                     tests=passes * systems * 2 if tests else 0,
                     what=f"{systems} systems, {n} queries, {families} families per split")
