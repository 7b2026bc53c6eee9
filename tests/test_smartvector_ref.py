"""smartvector_ref: the published reference package (smartvector-rag 0.1.1) driven through its public API, on
hand-made corpora (no model), plus the main experiment end to end with the hashing embedder."""

from __future__ import annotations

import datetime as dt_module
import functools
import importlib
import math

import numpy as np
import pytest
from omegaconf import OmegaConf

from smartvector_bench.core import CONF_DIR
from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems import build_retriever
from smartvector_bench.systems.smartvector_ref import (
    PATCHED_MODULES,
    chunk_positions,
    frozen_clock,
    naive,
)

from . import factories
from .conftest import TINY, compose_config


make_corpus = functools.partial(factories.make_corpus, authority=0.9, source="policy_doc")

T0 = 19723.0  # 2024-01-01, simulated days since the epoch (the wall clock is years later)


REF_TARGET = "smartvector_bench.systems.smartvector_ref.SmartVectorRef"


def ref(**cfg):
    return build_retriever("smartvector_ref", {"_target_": REF_TARGET, **cfg})


def indexed(rows: list[dict], serve_time: float, **cfg):
    r = ref(**cfg)
    corpus = make_corpus(rows)
    r.index(corpus, np.zeros((len(rows), 4), dtype=np.float32), serve_time)
    return r, corpus


def status(r, i: int) -> str:
    return r.db.vectors[r.vec_of[i]].status.name


def search(r, texts: list[str], as_of: list[float], k: int = 10):
    return r.search(np.zeros((len(texts), 4), dtype=np.float32), np.array(as_of, dtype=np.float64), k, texts=texts)


# ---- config ----------------------------------------------------------------------------------------------

def test_config_file_builds_and_keys_are_validated():
    cfg = OmegaConf.to_container(OmegaConf.load(f"{CONF_DIR}/retriever/smartvector_ref.yaml"))
    assert cfg["_target_"] == REF_TARGET and cfg["reported_confidence"] == "final_score"
    assert cfg["include_dormant"] is False
    r = build_retriever("smartvector_ref", cfg)
    assert r.params.reported_confidence == "final_score" and r.params.include_dormant is False
    with pytest.raises(BenchError, match=r"^retrievers\.smartvector_ref\.top_k: unknown key"):
        ref(top_k=3)
    with pytest.raises(BenchError, match=r"reported_confidence=score: unknown; allowed: final_score, confidence_sc"):
        ref(reported_confidence="score")
    with pytest.raises(BenchError, match=r"include_dormant='yes': must be true or false"):
        ref(include_dormant="yes")


# ---- supersession and id mapping ---------------------------------------------------------------------------

TWO_VERSIONS = [
    {"id": "P-v1-c0", "doc": "P", "version": 1, "created": T0, "valid_to": T0 + 20,
     "text": "The meal allowance is 50 euros per day."},
    {"id": "P-v1-c1", "doc": "P", "version": 1, "created": T0, "valid_to": T0 + 20,
     "text": "Ask the finance team about meal claims."},
    {"id": "Q-v1-c0", "doc": "Q", "version": 1, "created": T0 + 5, "text": "Laptops are replaced every three years."},
    {"id": "P-v2-c0", "doc": "P", "version": 2, "created": T0 + 20, "supersedes": 0,
     "text": "The meal allowance is 65 euros per day."},
    {"id": "P-v2-c1", "doc": "P", "version": 2, "created": T0 + 20, "supersedes": 1,
     "text": "Ask the finance team about meal claims."},
]


def test_chunk_positions_are_per_document_version():
    assert chunk_positions(make_corpus(TWO_VERSIONS)).tolist() == [0, 1, 0, 0, 1]


def test_chunk_positions_follow_the_offsets_not_the_row_order():
    # The corpus rows are shuffled (as the generator writes them): the same chunks in reverse row order get
    # the same positions, so each chunk still meets the same section of the previous version in the package.
    rows = TWO_VERSIONS[::-1]
    corpus = make_corpus(rows)
    n = len(rows)
    start = np.zeros(n, dtype=np.int64)
    for k, r in enumerate(rows):  # offsets in the document: the c0 section first, then c1
        if r["id"].endswith("c1"):
            start[k] = len(next(x["text"] for x in rows if x["id"] == r["id"][:-1] + "0")) + 1
    corpus.offset_start = start
    corpus.offset_end = start + np.array([len(r["text"]) for r in rows])
    assert chunk_positions(corpus).tolist() == [1, 0, 0, 1, 0]


def test_package_supersedes_the_old_version_at_ingest_and_never_returns_it():
    r, _corpus = indexed(TWO_VERSIONS, serve_time=T0 + 25)
    assert status(r, 0) == "DEPRECATED" and status(r, 1) == "DEPRECATED"
    assert status(r, 3) == "ACTIVE" and status(r, 4) == "ACTIVE" and status(r, 2) == "ACTIVE"
    old, new = r.db.vectors[r.vec_of[0]], r.db.vectors[r.vec_of[3]]
    assert old.superseded_by == new.vector_id and new.supersedes == old.vector_id
    assert r.describe()["supersession"] == {"in_corpus": 2, "deprecated_by_package": 2, "agree_with_corpus": 2,
                                            "disagree_with_corpus": 0, "not_deprecated_predecessor_status": {}}
    # The old wording is the best keyword match, but it is never returned once its successor was ingested.
    run = search(r, ["The meal allowance is 50 euros per day."] * 3, [T0 + 21, T0 + 25, T0 + 40])
    assert run.ranked[:, 0].tolist() == [3, 3, 3]
    assert not np.isin(run.ranked, [0, 1]).any()


def test_the_soft_variant_scores_deprecated_vectors_and_restores_their_status():
    # The hard package never returns the superseded wording (above); with status_filter off the same store
    # returns it where its four-signal score ranks it, and every status is as it was after the query.
    r, _corpus = indexed(TWO_VERSIONS, serve_time=T0 + 25, status_filter=False)
    assert status(r, 0) == "DEPRECATED"
    run = search(r, ["The meal allowance is 50 euros per day."], [T0 + 21])
    assert 0 in run.ranked[0].tolist()  # the DEPRECATED v1 chunk is a candidate again
    assert status(r, 0) == "DEPRECATED" and status(r, 1) == "DEPRECATED" and status(r, 3) == "ACTIVE"
    assert r.describe()["status_filter"].startswith("off")
    hard, _ = indexed(TWO_VERSIONS, serve_time=T0 + 25)
    assert 0 not in search(hard, ["The meal allowance is 50 euros per day."], [T0 + 21]).ranked[0].tolist()


def test_the_soft_variant_follows_the_hard_config():
    cfg = compose_config(["retrievers.smartvector_ref.include_dormant=true"])
    soft = cfg["retrievers"]["smartvector_ref_soft"]
    assert soft["_target_"] == REF_TARGET and soft["status_filter"] is False
    assert soft["include_dormant"] is True  # interpolated from retrievers.smartvector_ref
    assert {k: v for k, v in soft.items() if k != "status_filter"} == cfg["retrievers"]["smartvector_ref"]


def test_without_consolidation_between_versions_the_package_supersedes_nothing():
    # _find_existing_chunk only sees ACTIVE vectors: with one consolidation at serve time, v1 is still
    # UNCONSOLIDATED when v2 arrives, so both versions stay searchable (the package's design).
    r, _ = indexed(TWO_VERSIONS, serve_time=T0 + 25, consolidation_schedule="serve_time_only")
    assert status(r, 0) == "ACTIVE" and status(r, 3) == "ACTIVE"
    assert r.describe()["consolidation_runs"] == 1
    assert r.describe()["supersession"]["deprecated_by_package"] == 0


def test_a_dormant_predecessor_is_not_deprecated():
    rows = [{"id": "a1", "doc": "A", "version": 1, "created": T0, "text": "Backups run every 6 hours."},
            {"id": "a2", "doc": "A", "version": 2, "created": T0 + 100, "supersedes": 0,
             "text": "Backups run every 4 hours."}]
    r, _ = indexed(rows, serve_time=T0 + 101)
    assert status(r, 0) == "DORMANT" and status(r, 1) == "ACTIVE"
    assert r.describe()["supersession"]["not_deprecated_predecessor_status"] == {"DORMANT": 1}


def test_ids_map_back_to_corpus_indices():
    rows = [{"doc": f"d{i}", "created": T0 + i, "text": f"topic{i} alpha{i} beta{i}"} for i in range(6)]
    r, corpus = indexed(rows, serve_time=T0 + 6)
    assert sorted(r.row_of.values()) == list(range(6))
    for i in range(6):
        assert r.db.vectors[r.vec_of[i]].content == corpus.texts[i]
        assert r.db.vectors[r.vec_of[i]].doc_id == f"d{i}#0"
    run = search(r, [f"topic{i} alpha{i} beta{i}" for i in range(6)], [T0 + 6] * 6, k=10)
    assert run.ranked[:, 0].tolist() == list(range(6))
    # every rank: the package's own result list, mapped back
    with frozen_clock(naive(T0 + 6)):
        pkg = r.db.query("topic3 alpha3 beta3", top_k=10, reference_time=naive(T0 + 6))
    assert run.ranked[3, :6].tolist() == [corpus.texts.index(p.vector.content) for p in pkg]
    assert run.scores[3, :6].tolist() == [p.final_score for p in pkg]
    # fewer results than k: padded with -1 / NaN
    assert (run.ranked[:, 6:] == -1).all() and np.isnan(run.scores[:, 6:]).all()


def test_chunks_created_after_serve_time_are_not_ingested():
    rows = [{"doc": "a", "created": T0, "text": "red apples"}, {"doc": "b", "created": T0 + 10, "text": "red pears"}]
    r, _ = indexed(rows, serve_time=T0 + 5)
    assert list(r.row_of.values()) == [0]
    assert r.describe()["not_ingested_created_after_serve_time"] == 1


def test_validity_window_is_set_on_the_package_vectors():
    r, _ = indexed(TWO_VERSIONS, serve_time=T0 + 25)
    v = r.db.vectors[r.vec_of[0]]
    assert v.temporal_validity_start == naive(T0) and v.temporal_validity_end == naive(T0 + 20)
    assert r.db.vectors[r.vec_of[3]].temporal_validity_end is None
    assert v.created_at == naive(T0) and v.created_at.tzinfo is None


# ---- frozen clock ------------------------------------------------------------------------------------------

def test_dormancy_follows_serve_time_not_the_wall_clock():
    serve = T0 + 200
    rows = [{"doc": "old", "created": serve - 100, "authority": 0.9, "text": "old fact about printers"},
            {"doc": "new", "created": serve - 1, "authority": 0.9, "text": "new fact about scanners"}]
    assert 0.9 * 2 ** (-100 / 30) < 0.15 < 0.9 * 2 ** (-1 / 30)
    r, _ = indexed(rows, serve_time=serve)
    # on the wall clock (years after T0) both would be dormant
    assert status(r, 0) == "DORMANT" and status(r, 1) == "ACTIVE"
    assert r.describe()["statuses_after_consolidation"] == {"ACTIVE": 1, "DORMANT": 1}
    # ... and the clock is restored afterwards
    for name in PATCHED_MODULES:
        assert importlib.import_module(name).datetime is dt_module.datetime, name
    wall = importlib.import_module("smartvector.db").datetime.now()
    assert abs((wall - dt_module.datetime.now()).total_seconds()) < 5


def test_frozen_clock_restores_on_error():
    mod = importlib.import_module("smartvector.consolidation")
    with pytest.raises(RuntimeError), frozen_clock(naive(T0)):
        assert mod.datetime.now() == naive(T0)
        raise RuntimeError("boom")
    assert mod.datetime is dt_module.datetime


def test_query_uses_as_of_as_reference_time():
    rows = [{"doc": "a", "created": T0 + 40, "valid_to": T0 + 50, "authority": 0.9,
             "text": "vpn sessions expire after eight hours"}]
    r, _ = indexed(rows, serve_time=T0 + 45)
    q = "vpn sessions expire after eight hours"
    run = search(r, [q, q], [T0 + 45, T0 + 60])

    def expected(age: float, temporal: float) -> float:
        conf = round(0.9 * 2 ** (-age / 30), 4)
        return round(0.35 * 1.0 + 0.25 * temporal + 0.25 * conf + 0.15 * 0.0, 4)

    assert run.scores[0, 0] == expected(5, 2 ** (-5 / 30))  # inside the window, age 5 days at as_of
    assert run.scores[1, 0] == expected(20, 0.05)  # past its validity end at as_of: temporal = 0.05
    with frozen_clock(naive(T0 + 60)):
        hit = r.db.query(q, top_k=1, reference_time=naive(T0 + 60))[0]
    assert hit.temporal_score == 0.05


# ---- ranking and confidence --------------------------------------------------------------------------------

def test_keyword_similarity_as_shipped_ranks_the_full_overlap_first():
    rows = [{"doc": "b", "created": T0, "text": "parking permits renew yearly"},
            {"doc": "a", "created": T0, "text": "badge access requests need manager approval"},
            {"doc": "c", "created": T0, "text": "badge photos are taken on day one"}]
    r, _ = indexed(rows, serve_time=T0 + 1)
    run = search(r, ["Badge access requests need manager approval"], [T0 + 1])
    assert run.ranked[0, :3].tolist() == [1, 2, 0]  # sim 1, 1/6, 0; same age, authority and no edges
    assert run.scores[0, 0] - run.scores[0, 1] == pytest.approx(0.35 * (1 - 1 / 6), abs=2e-4)


def test_reported_confidence_options():
    rows = [{"doc": "a", "created": T0, "text": "alpha beta gamma", "authority": 0.9}]
    r, _ = indexed(rows, serve_time=T0 + 3)
    run = search(r, ["alpha beta gamma", "alpha"], [T0 + 3, T0 + 3])
    np.testing.assert_allclose(run.confidence, np.clip(run.scores[:, 0], 0, 1))
    assert "final_score" in r.describe()["confidence"]
    r2, _ = indexed(rows, serve_time=T0 + 3, reported_confidence="confidence_score")
    run2 = search(r2, ["alpha beta gamma"], [T0 + 3])
    assert run2.confidence[0] == round(0.9 * 2 ** (-3 / 30), 4)
    assert "confidence_score" in r2.describe()["confidence"]


def test_dormant_vectors_only_with_include_dormant():
    rows = [{"doc": "a", "created": T0, "text": "alpha beta"}, {"doc": "b", "created": T0 + 99, "text": "gamma"}]
    r, _ = indexed(rows, serve_time=T0 + 100)
    assert status(r, 0) == "DORMANT"
    assert 0 not in search(r, ["alpha beta"], [T0 + 100]).ranked[0]
    r2, _ = indexed(rows, serve_time=T0 + 100, include_dormant=True)
    assert 0 in search(r2, ["alpha beta"], [T0 + 100]).ranked[0]  # returned, though recency ranks it 2nd


def test_queries_do_not_modify_the_store():
    r, _ = indexed(TWO_VERSIONS, serve_time=T0 + 25)
    before = [(v.vector_id, v.status, v.access_count, v.positive_feedback, v.negative_feedback, v.base_confidence,
               list(v.depends_on), list(v.depended_by)) for v in r.db.vectors.values()]
    search(r, ["meal allowance", "laptops replaced"] * 5, [T0 + 30] * 10)
    after = [(v.vector_id, v.status, v.access_count, v.positive_feedback, v.negative_feedback, v.base_confidence,
              list(v.depends_on), list(v.depended_by)) for v in r.db.vectors.values()]
    assert after == before and all(v.access_count == 0 for v in r.db.vectors.values())


def test_queries_without_text_are_refused():
    r, _ = indexed(TWO_VERSIONS, serve_time=T0 + 25)
    with pytest.raises(BenchError, match=r"^retrievers\.smartvector_ref: .*query texts"):
        r.search(np.zeros((1, 4)), np.array([T0 + 30]), 10)
    with pytest.raises(BenchError, match=r"^retrievers\.smartvector_ref: query 1 has no text"):
        search(r, ["meal", "  "], [T0 + 30, T0 + 30])


# ---- the package's conflict vote ---------------------------------------------------------------------------

CONFLICT = [{"doc": "pol", "created": T0, "authority": 0.9,
             "text": "Passwords rotate every 90 days for all staff accounts."},
            {"doc": "chat", "created": T0 + 1, "authority": 0.3, "source": "slack",
             "text": "All staff accounts: rotate passwords every 60 days."}]


def test_conflict_vote_runs_with_identity_hashing_and_crash_is_reported_without():
    from smartvector.models import SmartVector

    r, _ = indexed(CONFLICT, serve_time=T0 + 2)
    assert r.describe()["consolidation_totals"]["conflicts_found"] == 1
    assert r.db.vectors[r.vec_of[0]].contradictions == [r.vec_of[1]]
    assert SmartVector.__hash__ is None  # restored: the package's class is unhashable again
    with pytest.raises(BenchError, match=r"^retrievers\.smartvector_ref: smartvector-rag crashed in its conflict"):
        indexed(CONFLICT, serve_time=T0 + 2, patch_conflict_vote=False)


def test_describe_reports_package_patch_and_consolidation():
    r, _ = indexed(TWO_VERSIONS, serve_time=T0 + 25)
    info = r.describe()
    assert info["package"]["name"] == "smartvector-rag" and info["package"]["version"] == "0.1.1"
    assert "datetime.now()" in info["patched"]["frozen_clock"]
    assert info["statuses_after_consolidation"] == {"ACTIVE": 3, "DEPRECATED": 2}
    assert info["consolidation_runs"] == 3  # before the batches at T0 + 5 and T0 + 20, and at serve time
    assert set(info["consolidation_at_serve_time"]) >= {"conflicts_found", "relationships_built"}
    assert info["wall_time_s"]["index"] >= 0 and math.isnan(info["wall_time_s"]["search"])


# ---- end to end --------------------------------------------------------------------------------------------

def _compose_with_ref(overrides: list[str]) -> dict:
    cfg = compose_config(overrides)
    if "smartvector_ref" not in cfg["retrievers"]:  # until conf/config.yaml lists it
        cfg = compose_config(overrides + ["+retriever@retrievers.smartvector_ref=smartvector_ref"])
    return cfg


def test_main_experiment_on_tiny_dataset(tmp_path):
    from experiments.main import run

    cfg = _compose_with_ref(TINY + ["embedder=hashing", "systems=[plain_cosine,smartvector_ref]"])
    metrics = run(cfg, tmp_path / "run")
    assert list(metrics["systems"]) == ["plain_cosine", "smartvector_ref"]
    n = metrics["dataset"]["n_queries"]
    for split in ("dev", "test"):
        m = metrics["systems"]["smartvector_ref"][split]
        for key in ("top1", "stale_rate", "rumor_rate", "ece", "mrr_at_10", "recall_at_5"):
            assert 0.0 <= m[key] <= 1.0, (split, key)
        assert 0.0 <= m["mcnemar_p"] <= 1.0
    assert sum(metrics["systems"]["smartvector_ref"][s]["n_queries"] for s in ("dev", "test")) == n
    info = metrics["system_info"]["smartvector_ref"]
    assert info["package"]["version"] == "0.1.1" and info["ingested"] == metrics["dataset"]["n_vectors"]
    assert info["supersession"]["disagree_with_corpus"] == 0
    assert info["supersession"]["deprecated_by_package"] > 0
    assert "| smartvector_ref |" in (tmp_path / "run" / "table.md").read_text()
    lines = (tmp_path / "run" / "run_smartvector_ref.jsonl").read_text().splitlines()
    assert len(lines) == n + 1
