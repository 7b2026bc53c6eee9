"""experiment=main: evaluate the chosen systems on one dataset and write the main table.

Writes, in ``out_dir``: ``run_<system>.jsonl`` and ``run_<system>.trec`` per system, ``qrels_{dev,test}.trec``,
``table.md`` and, last, ``metrics.json`` (:class:`~smartvector_bench.core.results.MainMetrics`; its presence marks a
complete run). Everything is validated before the first file is written.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from data_gen.build import write_from_config
from smartvector_bench.core import SCHEMA_VERSION
from smartvector_bench.core.atomic import atomic_write_text
from smartvector_bench.core.run.contract import RetrieverFault, check_info, check_search, check_signals, retriever_call
from smartvector_bench.core.dataset import CORPUS_META, SPLITS, Dataset, SplitSettings, load_dataset
from smartvector_bench.core.dataset.manifest import query_shortfall
from smartvector_bench.core.dataset.regimes import apply_regime, regime_record, regime_settings
from smartvector_bench.systems.discovery import in_tree
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.evaluation.evaluator import evaluate_split, hit_labels, judge, power_analysis
from smartvector_bench.core.evaluation import measured
from smartvector_bench.core.evaluation.metrics import names as M
from smartvector_bench.core.evaluation.metrics.calibration import calibration_report
from smartvector_bench.core.evaluation.metrics.scenarios import scenario_effects
from smartvector_bench.core.results.provenance import header, provenance
from smartvector_bench.core.report import render
from smartvector_bench.core.results import MainMetrics
from smartvector_bench.systems import build_retriever, configured
from smartvector_bench.systems.base import (AuditsConsolidation, FitsOnDev, RanksByKey, ReadsLabels, SavesModel,
                                           ScoresHits, TrainsOnDev)
from smartvector_bench.core.run import Run, write_qrels_trec, write_run_jsonl, write_run_trec
from smartvector_bench.core.timeutil import format_iso, from_days
from experiments.tuning import fit_on_dev, train_on_dev
from experiments.config import (  # noqa: F401 - re-exported
    MAXIMUM, check_dataset, check_embedder, check_evaluation_bounds, check_systems_on, chosen_systems,
    experiment_settings)


@dataclass(frozen=True)
class MainSettings:
    """``experiment.*`` of experiment=main (conf/experiment/main.yaml) and of the sweep presets built on it."""

    POSITIVE = ("n_boot", "ece_bins", "n_permutations")
    MINIMUM = {"k": 10}  # MRR@10 needs ten ranks
    MAXIMUM = MAXIMUM    # static caps; the dataset and the machine bound them further (check_evaluation_bounds)

    name: str = "main"
    k: int = 10                 # ranks kept per query; >= 10 (MRR@10)
    n_boot: int = 1000
    bootstrap_seed: int = 0
    ece_bins: int = 10
    n_permutations: int = 10000
    baseline: str = "plain_cosine"
    power_reference: str = "valid_cosine"
    progress: bool = True
    preset: str | None = None       # the sweep preset (conf/experiment/<preset>.yaml)
    tune_system: str | None = None  # experiment=tune: whose dev figures select the weights


def settings(cfg: dict) -> MainSettings:
    """Validate ``cfg["experiment"]`` against the chosen systems; errors name ``experiment.<key>``."""
    s = experiment_settings(MainSettings, cfg.get("experiment"))
    # a configured system, or an in-tree one a config composed without (the paired columns then stay empty)
    known = list(dict.fromkeys(configured(cfg.get("retrievers")) + in_tree()))
    for key in ("baseline", "power_reference", "tune_system"):
        name = getattr(s, key)
        if name is not None and name not in known:
            raise BenchError(f"experiment.{key}={name}: unknown system; allowed: {', '.join(known)}")
    for key in ("preset", "tune_system"):
        if getattr(s, key) is not None and not isinstance(getattr(s, key), str):
            raise BenchError(f"experiment.{key}={getattr(s, key)!r}: must be a name")
    return s


def validate(cfg: dict) -> MainSettings:
    """Everything experiment=main uses, checked before any work: ``experiment.*``, ``systems``, the dataset
    keys or folder, and the embedder keys (``run`` then builds the chosen systems, which checks their configs;
    the CLI checks every configured system first, smartvector_bench/tools/validate.py)."""
    s = settings(cfg)
    chosen_systems(cfg)
    check_dataset(cfg)
    check_embedder(cfg)
    return s


def split_settings(ds_cfg: dict) -> SplitSettings:
    """How an external dataset's queries without a split get one: ``dataset.split_seed`` (default 0) and
    ``dataset.split_test_fraction`` (default 0.5); give them with ``+dataset.split_seed=3``."""
    seed, frac = ds_cfg.get("split_seed", 0), ds_cfg.get("split_test_fraction", 0.5)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise BenchError(f"dataset.split_seed={seed!r}: must be an integer")
    if not isinstance(frac, (int, float)) or isinstance(frac, bool) or not 0 < frac < 1:
        raise BenchError(f"dataset.split_test_fraction={frac!r}: must be a number in (0, 1)")
    return SplitSettings(seed=seed, test_fraction=float(frac))


def prepare_dataset(cfg: dict, out_dir: Path) -> Dataset:
    """``dataset.path`` when given; otherwise the configured generator (synthetic or git_history) writes
    ``out_dir/dataset`` first."""
    ds_cfg = dict(cfg["dataset"])
    if ds_cfg.get("path"):
        return load_dataset(ds_cfg["path"], split=split_settings(ds_cfg))
    target = out_dir / "dataset"
    write_from_config(ds_cfg, target, overwrite=True)
    return load_dataset(target)


def served_corpus(cfg: dict, dataset: Dataset):
    """The corpus the retrievers see: ``dataset.corpus`` under ``dataset.metadata`` (full: equal arrays;
    smartvector_bench/core/dataset/regimes.py). The evaluator keeps ``dataset.corpus`` (the true windows)."""
    return apply_regime(dataset.corpus, *regime_settings(cfg["dataset"]))


def _regime_extras(cfg: dict) -> dict:
    """metrics.json's ``dataset.metadata`` (the regime and its noise settings), only when it is not ``full``."""
    record = regime_record(*regime_settings(cfg["dataset"]))
    return {"metadata": record} if record else {}


def usable_systems(cfg: dict, retrievers: dict, dataset: Dataset, truth: Dataset | None = None
                   ) -> tuple[dict, dict[str, str]]:
    """Which systems run on ``dataset`` (the corpus the retrievers are served). Under ``systems: all`` a system
    the dataset cannot serve is left out with its one-line reason (a plain BEIR folder has no validity
    windows). A system chosen by name must run, or the run stops here, unless it could serve ``truth`` (the
    dataset before ``dataset.metadata`` rewrote it): then the regime removed what it needs, which is a finding
    of the regime, and it is left out with its reason too."""
    named = cfg.get("systems", "all") != "all"
    kept, skipped = {}, {}
    for name, r in retrievers.items():
        exc = _refusal(name, r, dataset)
        if exc is None:
            kept[name] = r
            continue
        if named and (truth is None or truth is dataset or _refusal(name, r, truth) is not None):
            raise exc
        why = str(exc).removeprefix("systems: ")  # keep the reason, not the advice to drop it (done here)
        skipped[name] = why.split(f" ({dataset.path}; drop")[0].replace(f", but {dataset.path} has no labels/ "
                                                                         f"folder; drop it from systems=",
                                                                         " and the dataset has no labels/")
    if not kept:
        raise BenchError(f"systems: no chosen system can run on {dataset.path}: " + "; ".join(skipped.values()))
    return kept, skipped


def _refusal(name: str, retriever, dataset: Dataset) -> BenchError | None:
    """Why ``retriever`` cannot serve ``dataset`` (None when it can). A check that crashed is the system's bug, not
    a dataset it cannot serve: that is raised."""
    try:
        with retriever_call(name, "check_dataset"):
            check_systems_on({name: retriever}, dataset)
    except RetrieverFault:
        raise
    except BenchError as exc:
        return exc
    return None


def peak_rss_mb() -> float:
    """The process's peak resident memory so far (Linux reports KiB), in MB."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _dataset_extras(dataset: Dataset) -> dict:
    """What an external dataset left to defaults, and the categories its generator wrote short of the counts asked
    (nothing for a synthetic dataset, so its metrics.json is as before)."""
    out = {}
    missing = [k for k in CORPUS_META if k not in dataset.corpus.present]
    if missing:
        out["defaulted_fields"] = missing
    if dataset.split_assignment:
        out["split_assignment"] = dataset.split_assignment
    if short := query_shortfall(dataset.manifest):  # the loader has printed it; the result keeps it
        out["query_shortfall"] = short
    return out


# contradiction_detection's figures that are scored against the rumor sets (``verdicts`` is the system's own count)
RUMOR_SCORED = ("rumors_ingested", "rumors_demoted", "rumor_recall", "loser_precision")


def _info(name: str, retriever, queries, unmeasured: dict[str, str]) -> dict:
    """metrics.json's ``system_info.<name>``: each call guarded and its value checked to be JSON right after the
    system ran, so a bad one stops the run before any file is written."""
    with retriever_call(name, "describe"):
        info = retriever.describe()
    info = check_info(name, "describe", info)
    if isinstance(retriever, AuditsConsolidation):  # score its verdicts against the injected rumors
        with retriever_call(name, "contradiction_detection"):
            found = retriever.contradiction_detection(queries.rumor)
        found = check_info(name, "contradiction_detection", found)
        if why := unmeasured.get(M.RUMOR_RATE):  # no rumor sets: nothing to score against
            found = {**found, **dict.fromkeys(RUMOR_SCORED), measured.KEY: dict.fromkeys(RUMOR_SCORED, why)}
        info = {**info, "contradiction_detection": found}
    return info


CALIBRATION_METHODS = ("platt", "isotonic")  # metrics/calibration.py's METHODS


def calibrate(run: Run, correct: np.ndarray, queries, s: MainSettings) -> dict:
    """Each calibration map fitted on dev and applied to test, with raw and calibrated test ECE, Brier and
    AUROC (cluster intervals over test families); missing confidences are 0.0 as in the evaluator."""
    conf = np.nan_to_num(np.asarray(run.confidence, dtype=np.float64), nan=0.0)
    split = np.asarray(queries.split)
    dev, test = split == "dev", split == "test"
    families = np.asarray(queries.family, dtype=object)[test]
    return {m: calibration_report(conf[dev], correct[dev], conf[test], correct[test], families, method=m,
                                  n_bins=s.ece_bins, n_boot=s.n_boot, seed=s.bootstrap_seed)
            for m in CALIBRATION_METHODS}


def evaluate_runs(runs: dict[str, Run], queries, corpus, s: MainSettings,
                  unmeasured: dict[str, str] | None = None, labels=None) -> tuple[dict, dict, dict, dict]:
    """Everything metrics.json holds about the ranked lists, from the runs alone: each system's judgments, its
    metrics per split (paired tests against ``s.baseline`` when it ran) with the anatomy of its wrong top-1s
    (``anatomy``, ``version_accuracy``: core/evaluation/metrics/anatomy.py), its calibration, and the power analysis.
    ``unmeasured``: the dataset's ``measured.unmeasured`` (None: everything is measured); ``labels``: the
    dataset's labels (None: the anatomy's label classes are not measured). The gate replays committed run files
    through it (``tools/gate/replay.py``)."""
    from smartvector_bench.core.evaluation.metrics import anatomy
    baseline = s.baseline  # when it is not among the systems run, the paired columns stay empty
    judged = {name: judge(r, queries) for name, r in runs.items()}  # once per system: every split and file uses it
    baseline_correct = judged[baseline]["correct"] if baseline in runs else None
    missing = anatomy.gaps(labels, unmeasured)  # {input: reason} of the labels the anatomy lacks
    results = {}
    for name, r in tqdm(runs.items(), desc="evaluate", disable=not s.progress, leave=False):
        results[name] = {split: evaluate_split(r, queries, split, baseline_correct=baseline_correct,
                                               n_boot=s.n_boot, seed=s.bootstrap_seed, n_bins=s.ece_bins,
                                               windows=(corpus.valid_from, corpus.valid_to),
                                               n_permutations=s.n_permutations, judged=judged[name],
                                               unmeasured=unmeasured)
                         for split in SPLITS}
        classes = anatomy.run_classes(r.top1, judged[name]["correct"], queries, corpus, labels, missing)
        for split, out in results[name].items():  # the true corpus times, never a retriever's
            rows = np.asarray(queries.split) == split
            out.update(anatomy.split_anatomy(classes[rows], np.asarray(queries.family, dtype=object)[rows],
                                             s.n_boot, s.bootstrap_seed, missing))
    calibration = {name: calibrate(r, judged[name]["correct"], queries, s) for name, r in runs.items()}
    power_ref = s.power_reference
    power_ref = power_ref if power_ref in runs else baseline if baseline in runs else next(iter(runs))
    power = power_analysis(judged[power_ref]["correct"], queries, "test", reference=power_ref)
    return judged, results, calibration, power


def scenario_table(judged: dict, queries, dataset: Dataset, baseline: str, s: MainSettings) -> dict | None:
    """Test top-1 by scenario feature (core/evaluation/metrics/scenarios.py), when the dataset's labels carry scenarios;
    the paired gap is taken to the power reference (valid_cosine by default), the verdicts' reference."""
    labels = dataset.labels
    if labels is None or not any(labels.scenarios.values()):
        return None
    test = np.asarray(queries.split) == "test"
    correct = {name: np.asarray(j["correct"])[test] for name, j in judged.items()}
    families = np.asarray(labels.query_family, dtype=object)[test]
    ref = s.power_reference if s.power_reference in judged else baseline if baseline in judged else None
    return {"reference": ref, "features": scenario_effects(correct, families, labels.scenarios, ref,
                                                           n_resamples=min(s.n_permutations, 2000),
                                                           seed=s.bootstrap_seed)}


def run(cfg: dict, out_dir: str | Path) -> dict:
    """The whole experiment as a plain function (the Hydra entry point only resolves the config)."""
    out_dir = Path(out_dir)
    s = validate(cfg)  # before any work or write
    k = s.k
    systems = chosen_systems(cfg)
    retrievers = {name: build_retriever(name, dict(cfg["retrievers"][name])) for name in systems}

    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    embedder = build_embedder(dict(cfg["embedder"]))  # before writing anything: a bad embedder config stops here
    dataset = prepare_dataset(cfg, out_dir)
    check_evaluation_bounds(s, dataset, len(systems))  # k, ece_bins and the resampling, before any embedding
    corpus, queries = dataset.corpus, dataset.queries  # the truth: everything judged reads these
    served = served_corpus(cfg, dataset)  # what the retrievers see (dataset.metadata)
    # before any text is embedded: labels/ and the metadata each system needs
    retrievers, skipped = usable_systems(cfg, retrievers, replace(dataset, corpus=served), dataset)
    systems = [n for n in systems if n in retrievers]
    for name, why in skipped.items():
        print(f"not run: {why}", file=sys.stderr)
    corpus_vecs = embedder.encode(corpus.texts)
    query_vecs = embedder.encode(queries.texts)
    timings["dataset_and_embedding_s"] = time.perf_counter() - t0
    serve_time = float(queries.query_time.min())  # consolidation runs just before the first query

    unmeasured = measured.unmeasured(dataset)  # {metric: reason}; empty for a generated dataset
    runs: dict[str, Run] = {}
    signals: dict[str, dict] = {}  # per-hit signals of the four-signal systems, for the run files
    infos: dict[str, dict] = {}
    for name in tqdm(systems, desc="systems", disable=not s.progress, leave=False):
        t = time.perf_counter()
        retriever = retrievers[name]
        if isinstance(retriever, FitsOnDev):  # its settings fitted on the dev queries first (experiments/tuning.py)
            fit_on_dev(name, retriever, served, corpus_vecs, serve_time, query_vecs, queries, k, s.progress)
        with retriever_call(name, "index"):
            retriever.index(served, corpus_vecs, serve_time)
        if isinstance(retriever, TrainsOnDev):  # trained on the dev queries' qrels only (experiments/tuning.py)
            train_on_dev(name, retriever, query_vecs, queries)
        extra = {}
        if isinstance(retriever, ReadsLabels):  # only a declared ceiling (the oracle) sees labels
            with retriever_call(name, "index_labels"):
                retriever.index_labels(dataset.labels.chunk_family, dataset.labels.chunk_kind)
            extra["query_family"] = dataset.labels.query_family
        with retriever_call(name, "search"):
            out = retriever.search(query_vecs, queries.as_of, k, texts=queries.texts, **extra)
        timings[f"{name}_s"] = time.perf_counter() - t
        # Named by its configured name (a variant such as smartvector_soft shares its class). A RanksByKey system
        # (recency, authority, dormancy first) may report scores that rise down its ranking.
        runs[name] = run_ = check_search(name, out, queries.ids, k, len(corpus),
                                         ordered=not isinstance(retriever, RanksByKey))
        if isinstance(retriever, ScoresHits):  # after ranking and outside its time: hits only, same state
            with retriever_call(name, "hit_signals"):
                hits = retriever.hit_signals(query_vecs, queries.as_of, run_.ranked)
            signals[name] = check_signals(name, hits, run_.ranked.shape)
        infos[name] = _info(name, retriever, queries, unmeasured)

    baseline = s.baseline  # when it is not among the systems run, the paired columns stay empty
    judged, results, calibration, power = evaluate_runs(runs, queries, corpus, s, unmeasured=unmeasured,
                                                        labels=dataset.labels)
    per_query = measured.per_query_clusters(dataset)
    scenarios = scenario_table(judged, queries, dataset, baseline, s)
    result = MainMetrics(
        schema_version=SCHEMA_VERSION,
        dataset={"name": cfg["dataset"].get("name", "custom") if not cfg["dataset"].get("path") else
                 ((dataset.manifest or {}).get("config") or {}).get("name", "custom"),
                 "path": str(dataset.path), "sha256": dataset.sha256, "n_vectors": len(corpus),
                 "n_queries": len(queries), "seed": dataset.seed,
                 "n_families": int(len(set(queries.family.tolist()))),
                 "labels": dataset.labels is not None, **_dataset_extras(dataset), **_regime_extras(cfg),
                 **({measured.CLUSTERS: per_query} if per_query else {})},
        embedder=embedder.model_id,
        experiment={"name": s.name, "baseline": baseline, "baseline_run": baseline in runs, "k": k,
                    "serve_time": format_iso(from_days(serve_time))},
        systems=results,
        power=power,
        calibration=calibration,
        system_info=infos,
        skipped_systems=skipped or None,
        timings_s={k_: round(v, 3) for k_, v in timings.items()},  # wall time, informational only
        resources={"peak_rss_mb": peak_rss_mb()},
        scenarios=scenarios,  # this process's high-water mark, informational only
        provenance=provenance(cfg),
    ).validate(out_dir / MainMetrics.FILE)  # before the first file is written
    metrics = result.to_dict()
    for name, r in runs.items():
        write_run_jsonl(out_dir / f"run_{name}.jsonl", r, queries, corpus, judged[name], header(metrics), k=10,
                        labels=hit_labels(r, queries, k=10), signals=signals.get(name), unmeasured=unmeasured)
        write_run_trec(out_dir / f"run_{name}.trec", r, queries, corpus, k=10)
        if isinstance(retrievers.get(name), SavesModel):  # what the gate searches with on another CPU
            with retriever_call(name, "model_text"):
                text = retrievers[name].model_text()
            if isinstance(text, str):
                atomic_write_text(out_dir / f"model_{name}.txt", text)
    for split in SPLITS:  # qrels beside the TREC runs, so trec_eval / ir-measures / ranx score them as they are
        write_qrels_trec(out_dir / f"qrels_{split}.trec", queries, corpus, split=split)
    table = render(metrics)
    atomic_write_text(out_dir / "table.md", table)
    result.save(out_dir / MainMetrics.FILE)
    return metrics
