"""experiment=lvl_eval: LiveVectorLake's own evaluation (arXiv 2601.05270, section V), done with ground truth.

The paper claims, on 100 documents x 5 versions: 10-15% of the content re-processed per update (vs 100% for
full re-indexing), hot-tier query latency p50/p95/p99 65/110/145 ms, cold-tier as-of queries p50 1.2 s, 100%
change-detection accuracy, 100% temporal accuracy with 0% leakage. Its public code computes the 1.2%
re-processing figure from globally de-duplicated hashes over per-document chunk counts, restates the validity
filter as "temporal accuracy" on queries unrelated to the corpus and never computes p95/p99. Here the same
questions are asked of ``smartvector_bench.systems.livevectorlake.LiveVectorLake`` on ``dataset=lvl_corpus`` (a corpus shaped like
theirs whose generator wrote down every edit):

1. every document version of ``documents.jsonl`` is ingested into a fresh lake in effective-time order; the
   paragraph vectors come from the (cached) embedder, looked up when the lake asks for them, and every text the
   lake asks for is recorded;
2. **re-embedding share** per document and version step v -> v+1: paragraphs the lake asked to embed /
   paragraphs of version v+1 (never de-duplicated across documents), per step (mean with a 95% bootstrap CI
   over documents, median, p90) and over all steps; beside it full re-indexing (100%) and the public code's
   global de-duplication (distinct hashes never seen before in ANY document / all paragraphs of the step);
3. **change detection**: the lake's class of every paragraph position (``IngestResult.position_classes``) and
   its deleted rows (cold-tier rows closed with status ``deleted``) against ``edits.jsonl``: precision and recall
   per class, for "must this paragraph be embedded" and for deletions; reverts and moved paragraphs counted
   apart;
4. **latency**: every current query on the hot tier and every historical query on the cold tier (with the
   in-memory table cache and without it, i.e. one Delta scan per query as their system reads Parquet per query),
   each timed ``repeats`` times (interleaved passes, every repetition kept), ``lake.query`` alone and with the
   query's embedding (the raw model, no cache, one text per call) included;
5. **temporal accuracy** against the gold rows (the qrels' relevant set: on an lvl_corpus, the fact row in
   force at ``as_of``): top-1, MRR@10 and recall@k per category with bootstrap CIs, every returned row mapped to
   the corpus (doc_id + text + a validity window containing ``as_of``), and temporal leakage (returned rows
   whose window excludes ``as_of``, by the lake's window and by the corpus's).

``documents.jsonl`` and ``edits.jsonl`` are checked against their sha256 in the dataset's ``manifest.json``.

Writes, in ``out_dir``: ``lvl_eval_reembed.csv`` (one row per document and version step),
``lvl_eval_latency.csv`` (one row per timed repetition),
``lvl_eval.md`` and the same ``table.md`` (printed by the CLI) and, last, ``lvl_eval.json``. Everything is
validated before the first file is written; every file is written atomically.

Where the pieces are: the lvl_corpus files are read by ``smartvector_bench.core.dataset.documents``; the lake is driven
and timed by ``experiments/lvl_lake.py`` and scored by ``experiments/lvl_scoring.py`` (formulas in
``smartvector_bench.core.evaluation.metrics.summary``; returned rows judged by
``smartvector_bench.core.evaluation.evaluator``); the claims and verdict rules are in
``smartvector_bench.core.evaluation.verdicts.lvl_rules``, the table in ``experiments.lvl_report``, and the paper figure
in ``paper_figures/fig_lvl_eval.py``. This module validates, runs and writes.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from data_gen.params import params_from_config
from experiments.lvl_lake import Timed, ingest_all, lake_rows, latency_rows, latency_section, time_queries
from experiments.lvl_scoring import change_detection, ingest_section, reembedding, temporal_section
from experiments.main import prepare_dataset
from smartvector_bench.core import SCHEMA_VERSION
from smartvector_bench.core.atomic import atomic_write_text
from smartvector_bench.core.embedding import build_embedder
from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.dataset.documents import LVL_FILES, load_versions
from smartvector_bench.core.evaluation.metrics.summary import ratio
from smartvector_bench.core.results.provenance import provenance
from experiments.lvl_report import SERIES, csv_text, render
from smartvector_bench.core.results import LvlEval
from smartvector_bench.core.settings import choice
from smartvector_bench.core.evaluation.verdicts.lvl_rules import CLAIMS, RULES, claims_vs_ours, verdicts
from smartvector_bench.systems.livevectorlake import LiveVectorLake
from smartvector_bench.systems.livevectorlake.milvus_conn import remove_lake
from experiments.config import (ExperimentSettings, VECTOR_S, check_data_bounds, check_embedder, check_regime,
                                check_resampling, experiment_settings)


# The run draws no figure: paper_figures/fig_lvl_eval.py draws them from lvl_eval.json alone.
PLOTS = {"files": [], "note": "figures are drawn from lvl_eval.json by paper_figures/fig_lvl_eval.py"}


# -- settings --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LvlEvalSettings(ExperimentSettings):
    POSITIVE = ("k", "repeats", "n_boot")

    name: str = "lvl_eval"
    repeats: int = 5
    lake_path: str | None = None
    hot_index: str = choice("milvus", "flat", "hnsw", "milvus_hnsw")


def settings(exp: dict | None) -> LvlEvalSettings:
    """Validate ``cfg["experiment"]``; every error names ``experiment.<key>`` and what is allowed."""
    s = experiment_settings(LvlEvalSettings, exp)
    if s.k < 10:
        raise BenchError(f"experiment.k={s.k}: must be >= 10 (MRR@10 needs ten ranks)")
    if s.lake_path is not None:
        if not isinstance(s.lake_path, str) or not s.lake_path.strip():
            raise BenchError(f"experiment.lake_path={s.lake_path!r}: must be null or a folder path")
        path = Path(s.lake_path)
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise BenchError(f"experiment.lake_path={path}: must be an empty or missing folder (a fresh lake is "
                             "built there)")
    return s


def check_dataset_config(ds: dict) -> None:
    """The dataset must be an lvl_corpus: generated (``dataset=lvl_corpus``) or a folder holding its files."""
    if ds.get("path"):
        root = Path(ds["path"])
        if not root.is_dir():
            raise BenchError(f"dataset.path={root}: {'is not a folder' if root.exists() else 'does not exist'}; "
                             f"experiment=lvl_eval needs an lvl_corpus folder (the BEIR files plus "
                             f"{', '.join(LVL_FILES)}; generate one with smartvector-gen dataset=lvl_corpus)")
        for name in LVL_FILES:
            if not (root / name).is_file():
                raise BenchError(f"dataset.path={root}: {name} is missing; experiment=lvl_eval needs an lvl_corpus "
                                 f"folder ({', '.join(LVL_FILES)} beside the BEIR files; generate one with "
                                 "smartvector-gen dataset=lvl_corpus)")
        return
    if ds.get("name") != "lvl_corpus":
        raise BenchError(f"dataset={ds.get('name')}: experiment=lvl_eval needs dataset=lvl_corpus (its "
                         f"{' and '.join(LVL_FILES)} hold every document version and the ground-truth edits)")
    params_from_config(dict(ds))  # validate before writing anything


CORPUS_NEEDS = ("doc_id", "valid_from")  # a returned lake row maps to corpus chunks by document and window


def check_corpus_fields(dataset) -> None:
    """One line naming the corpus metadata an lvl_corpus folder must give (CorpusMap reads them)."""
    missing = [f for f in CORPUS_NEEDS if f not in dataset.corpus.present]
    if missing:
        raise BenchError(f"{dataset.path / 'corpus.jsonl'}: gives no metadata.{' / metadata.'.join(missing)} for "
                         "every chunk; experiment=lvl_eval maps the lake's rows back to corpus chunks by doc_id and "
                         "validity window (an lvl_corpus from smartvector-gen dataset=lvl_corpus has them)")


def validate(cfg: dict) -> LvlEvalSettings:
    """``experiment.*``, the dataset (an lvl_corpus) and the embedder keys, before any work or write."""
    s = settings(cfg.get("experiment"))
    check_regime(cfg)  # dataset.metadata: full only
    check_dataset_config(dict(cfg["dataset"]))
    check_embedder(cfg)
    return s


def run(cfg: dict, out_dir: str | Path) -> dict:
    out_dir = Path(out_dir)
    t_start = time.perf_counter()
    load_start = _loadavg()
    s = validate(cfg)
    embedder = build_embedder(dict(cfg["embedder"]))
    timings: dict[str, float] = {}

    t = time.perf_counter()
    dataset = prepare_dataset(cfg, out_dir)
    check_corpus_fields(dataset)  # before anything is embedded
    versions = load_versions(dataset.path, dataset.manifest)
    corpus, queries = dataset.corpus, dataset.queries
    check_data_bounds(s, dataset)  # k, then n_boot: per-query intervals and per-document-step shares
    units = max(len(queries), len(versions))
    check_resampling(s, units, 16 * VECTOR_S * units, what=f"{len(queries)} queries, {len(versions)} versions")
    timings["dataset"] = time.perf_counter() - t

    t = time.perf_counter()
    texts = sorted({p for v in versions for p in v.paragraphs})
    vec_of = dict(zip(texts, embedder.encode(texts)))
    query_vecs = embedder.encode(queries.texts)  # for the query-only timings and the accuracy (cached)
    timings["embedding"] = time.perf_counter() - t

    temp = s.lake_path is None
    # A temporary lake lives in tempfile.gettempdir(): under smartvector-bench that is the job's <run>/.scratch/
    # (smartvector_bench.core.scratch), so even a killed run leaves nothing in /tmp; removed in `finally` below.
    lake_dir = Path(tempfile.mkdtemp(prefix="lvl_eval-lake-", dir=tempfile.gettempdir())) if temp else Path(s.lake_path)
    try:
        lake = LiveVectorLake.open(lake_dir, dim=embedder.dim, hot_index=s.hot_index, cold_cache=True)
        t = time.perf_counter()
        ingested = ingest_all(lake, versions, vec_of, embedder.dim, s.progress)
        timings["ingest"] = time.perf_counter() - t
        check = lake.check()
        describe = lake.describe()
        lrows = lake_rows(lake, ingested)

        t = time.perf_counter()
        cold_load = lake.cold.snapshot().load_s  # the cached lake's one full-table read
        uncached = LiveVectorLake.open(lake_dir, hot_index=s.hot_index, cold_cache=False)
        cat = np.asarray(queries.category).astype(str)
        groups = {"hot": np.nonzero(cat != "historical")[0], "cold_cached": np.nonzero(cat == "historical")[0],
                  "cold_uncached": np.nonzero(cat == "historical")[0]}
        lakes = {"hot": lake, "cold_cached": lake, "cold_uncached": uncached}
        expect = {"hot": "hot", "cold_cached": "cold", "cold_uncached": "cold"}
        model = embedder.inner  # the raw model: no cache, one text per call
        timed: dict[str, dict[str, Timed]] = {}
        for series in SERIES:
            idx = groups[series]
            qt = [queries.texts[i] for i in idx]
            args = (lakes[series], qt, query_vecs[idx], queries.as_of[idx], s.k, s.repeats)
            timed[series] = {
                "query_only": time_queries(*args, progress=s.progress, desc=f"{series} query_only"),
                "with_embedding": time_queries(*args, encode=model.encode, progress=s.progress,
                                               desc=f"{series} with_embedding"),
            }
        timings["queries"] = time.perf_counter() - t
    finally:
        if temp:  # stops the lake's milvus-lite server first: stopping it later would re-create the folder
            remove_lake(str(lake_dir))

    re_ = reembedding(ingested, s.n_boot, s.bootstrap_seed)
    cd = change_detection(ingested, lrows)
    latency = latency_section(timed, groups, queries.ids, expect, cold_load)
    first_hits = {series: timed[series]["query_only"].first_hits for series in SERIES}
    temporal = temporal_section(first_hits, queries, groups, corpus, s.k, s.n_boot, s.bootstrap_seed)
    ingest = ingest_section(ingested)

    n_docs = len({v.doc_id for v in versions})
    result = {
        "schema_version": SCHEMA_VERSION,
        "experiment": "lvl_eval",
        "dataset": {"path": str(dataset.path), "sha256": dataset.sha256, "seed": dataset.seed,
                    "n_documents": n_docs, "n_versions": max(v.version for v in versions),
                    "n_document_versions": len(versions),
                    "n_paragraphs": sum(len(v.paragraphs) for v in versions), "n_corpus_rows": len(corpus),
                    "n_queries": len(queries),
                    "queries_by_category": dict(sorted(Counter(cat.tolist()).items())),
                    "generator_config": (dataset.manifest or {}).get("config")},
        "embedder": embedder.model_id,
        "query_embedder": {"model_id": embedder.model_id, "cache": "off", "texts_per_call": 1},
        "config": asdict(s),
        "host": {"cpu_count": _cpus(), "loadavg_1_5_15_at_start": load_start, "loadavg_1_5_15_at_end": _loadavg(),
                 "torch_threads": _torch_threads()},
        "lake": {"path": None if temp else str(lake_dir), "temporary": temp, "hot_index": s.hot_index,
                 "check": check, "hot_rows": describe["hot_rows"], "cold_rows": describe["cold_rows"],
                 "hot_share_of_cold_rows": ratio(describe["hot_rows"], describe["cold_rows"]),
                 "cold_table_version": describe["cold_table_version"]},
        "ingest": ingest,
        "reembedding": re_,
        "change_detection": cd,
        "latency": latency,
        "temporal": temporal,
        "rules": RULES,
    }
    result["verdicts"] = verdicts(result)
    result["claims"] = {**claims_vs_ours(result), "paper_corpus": CLAIMS["corpus"]}
    share_rows = re_["per_document"]
    lat_rows = latency_rows(latency, groups, queries)
    atomic_write_text(out_dir / "lvl_eval_reembed.csv", csv_text(share_rows, [
        "doc_id", "step", "from_version", "to_version", "paragraphs", "embedded", "share", "truth_new_or_modified"]))
    atomic_write_text(out_dir / "lvl_eval_latency.csv", csv_text(lat_rows, [
        "series", "mode", "query_id", "category", "repeat", "seconds"]))
    result["csv_files"] = ["lvl_eval_reembed.csv", "lvl_eval_latency.csv"]
    result["plots"] = PLOTS
    timings["total"] = time.perf_counter() - t_start
    result["timings_s"] = {k_: round(v_, 3) for k_, v_ in timings.items()}  # wall time, informational
    result["provenance"] = provenance(cfg)
    saved = LvlEval.from_dict(result, out_dir / LvlEval.FILE)  # checked before the tables and the JSON are written
    table = render(result)
    atomic_write_text(out_dir / "lvl_eval.md", table)
    atomic_write_text(out_dir / "table.md", table)
    saved.save(out_dir / LvlEval.FILE)
    return result


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _torch_threads() -> int | None:
    torch = sys.modules.get("torch")  # only when the embedder loaded it
    return int(torch.get_num_threads()) if torch is not None else None


def _cpus() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()
