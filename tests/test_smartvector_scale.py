"""SmartVector's search modes at scale (systems/smartvector/retriever.py, "Search modes") and the index helpers
they use. The exhaustive paths against the spec are in ``tests/test_formulas_*.py``. The re-ranking path must give
the exhaustive answer wherever it certifies, and never return a vector that the status rules exclude. Scale data: ``scale_dataset(3000)`` (synthetic vectors, real MiniLM base vectors).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.core.index import FlatIndex, HNSWIndex, build_index
from smartvector_bench.systems.smartvector.bounds import Blocks, block_bound, key_bound, top_bounds
from smartvector_bench.systems.smartvector.retriever import SmartVector
from smartvector_bench.systems.smartvector.scoring import columns, dedupe_rows, top_k_by_key
from smartvector_bench.tools.perf.search import metadata_bytes, rerank_agreement
from smartvector_bench.core.run import rank_by_score
from smartvector_bench.tools.scale import scale_dataset

from .conftest import compose_config

K = 10


def sv_config(**overrides) -> dict:
    """The parameters of retrievers.smartvector (its _target_ left out), for SmartVector(**...)."""
    cfg = compose_config()["retrievers"]["smartvector"]
    cfg.pop("_target_")
    cfg.update(overrides)
    return cfg


@pytest.fixture(scope="module")
def data():
    return scale_dataset(3000, seed=0, n_queries=300)


@pytest.fixture(scope="module")
def served(data):
    r = SmartVector(**sv_config())
    r.index(data.corpus, data.corpus_vectors, float(np.max(data.queries.as_of)))
    return r


# -- index helpers ---------------------------------------------------------------------------------------------

def _unit(rng, n, d=32):
    x = rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_dense_scores_are_the_cosines_in_row_order():
    rng = np.random.default_rng(0)
    x = _unit(rng, 500)
    idx = FlatIndex(x)
    q = _unit(rng, 40)
    dense = idx.dense_scores(q)
    assert dense.shape == (40, 500) and dense.dtype == np.float64
    assert np.allclose(dense, q.astype(np.float64) @ x.astype(np.float64).T, atol=2e-6)
    assert np.allclose(dense, idx.all_scores(q), atol=2e-6)


def test_stored_view_is_the_indexed_vectors_read_only():
    rng = np.random.default_rng(1)
    x = _unit(rng, 50)
    for idx in (FlatIndex(x), HNSWIndex(x, 8, 40, 16)):
        v = idx.stored()
        assert np.array_equal(v, x) and not v.flags.writeable
    assert HNSWIndex(x, 8, 40, 16).nbytes() > FlatIndex(x).nbytes() == 50 * 32 * 4


def test_build_index_rejects_unknown_kind():
    with pytest.raises(ValueError, match="index=ivf"):
        build_index(np.zeros((2, 4), dtype=np.float32), "ivf")


def test_top_k_by_key_equals_rank_by_score_with_ties_and_exclusions():
    rng = np.random.default_rng(2)
    for trial in range(20):
        q, n = 7, 400
        key = np.round(rng.random((q, n)), 2)  # many exact ties
        key[rng.random((q, n)) < 0.3] = -np.inf
        key[0, :] = -np.inf  # a query with nothing left
        key[1, 5:] = -np.inf  # fewer than k candidates
        expected = rank_by_score(key, K)[0]
        assert np.array_equal(top_k_by_key(key, K), expected), trial


def test_dedupe_rows_keeps_first_occurrence_and_drops_negative_ids():
    ids = np.array([[3, 1, 3, -1, 2, 1], [-1, -1, 0, 0, 0, 5]])
    assert dedupe_rows(ids).tolist() == [[True, True, False, False, True, False],
                                         [False, False, True, False, False, True]]


# -- exhaustive (its formulas against the spec: tests/test_formulas_*.py) ----------------------------------

def test_compiled_kernel_drops_excluded_and_pads_short_runs(served, data):
    """An as_of before every vector's creation leaves nothing to rank: -1 ids, NaN scores and confidence; a
    query between gets only vectors that existed then."""
    qv = data.query_vectors[:3]
    early = float(data.corpus.created_at.min()) - 1.0
    mid = float(np.median(data.corpus.created_at))
    run = served.search(qv, np.array([early, mid, mid]), K)
    assert (run.ranked[0] == -1).all() and np.isnan(run.scores[0]).all() and np.isnan(run.confidence[0])
    got = run.ranked[1:][run.ranked[1:] >= 0]
    assert len(got) and (data.corpus.created_at[got] <= mid).all()


def test_exhaustive_memory_budget_splits_blocks_without_changing_results(data, served):
    qv, as_of = data.query_vectors[:50], data.queries.as_of[:50]
    full = served.search(qv, as_of, K)
    base = served.search_params
    served.search_params = replace(base, memory_budget_mb=0.5)
    try:
        assert served.exhaustive_batch() < 50
        small = served.search(qv, as_of, K)
    finally:
        served.search_params = base
    assert np.array_equal(full.ranked, small.ranked)
    assert np.array_equal(full.confidence, small.confidence)


def test_float32_precision_stays_close(data, served):
    qv, as_of = data.query_vectors[:60], data.queries.as_of[:60]
    ref = served.search(qv, as_of, K)
    base = served.search_params
    served.search_params = replace(base, precision="float32")
    try:
        run = served.search(qv, as_of, K)
    finally:
        served.search_params = base
    assert np.nanmax(np.abs(run.scores[:, 0] - ref.scores[:, 0])) < 1e-5
    assert (run.top1 == ref.top1).mean() >= 0.95


# -- re-ranking ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("c", [1, 10, 50])
def test_certified_rerank_matches_exhaustive(data, served, c):
    qv, as_of = data.query_vectors, data.queries.as_of
    exhaustive = served.search(qv, as_of, K)
    base = served.search_params
    served.search_params = replace(base, candidates=c)
    try:
        run = served.search(qv, as_of, K)
        info = dict(served.last_search)
    finally:
        served.search_params = base
    assert info["mode"] == "rerank" and info["certified"]
    # exact up to float32 rounding of the prior candidates' cosines: the same top-k everywhere here
    assert np.array_equal(run.top1, exhaustive.top1)
    assert (run.ranked == exhaustive.ranked).all(axis=1).mean() >= 0.99
    assert np.allclose(run.scores, exhaustive.scores, atol=1e-6, equal_nan=True)
    # and it did not get there by scoring everything
    assert info["scored_per_query"] < len(data.corpus) / 2


def test_rerank_with_every_row_a_candidate_is_exhaustive(data, served):
    qv, as_of = data.query_vectors[:40], data.queries.as_of[:40]
    exhaustive = served.search(qv, as_of, K)
    base = served.search_params
    served.search_params = replace(base, candidates=len(data.corpus))
    try:
        run = served.search(qv, as_of, K)
    finally:
        served.search_params = base
    assert np.array_equal(run.ranked, exhaustive.ranked)


def test_uncertified_cosine_only_rerank_differs_and_is_reported(data, served):
    """Cosine candidates alone miss the four-signal answer often (why prior candidates exist)."""
    qv, as_of = data.query_vectors, data.queries.as_of
    exhaustive = served.search(qv, as_of, K)
    base = served.search_params
    served.search_params = replace(base, candidates=10, prior_candidates=0, certify=False)
    try:
        run = served.search(qv, as_of, K)
    finally:
        served.search_params = base
    assert (run.top1 != exhaustive.top1).any()


def test_hnsw_rerank_never_returns_excluded_vectors(data):
    r = SmartVector(**sv_config(candidates=20, index="hnsw", hnsw_m=16, hnsw_ef_construction=40, hnsw_ef_search=32))
    r.index(data.corpus, data.corpus_vectors, float(np.max(data.queries.as_of)))
    qv, as_of = data.query_vectors, data.queries.as_of
    run = r.search(qv, as_of, K)
    assert not r.last_search["certified"]
    _, key, _ = r.score(r._index.dense_scores(qv), as_of)
    got = np.take_along_axis(key, np.where(run.ranked >= 0, run.ranked, 0), axis=1)
    assert np.isfinite(got[run.ranked >= 0]).all()  # every returned vector is allowed at its query's as_of


def test_key_bound_bounds_every_key_over_its_span(data, served):
    cols = columns(served)
    w = served.weights
    as_of = np.sort(data.queries.as_of)
    lo, hi = float(as_of[100]), float(as_of[100]) + 7.0
    bound = key_bound(served, cols, lo, hi)
    ts = np.linspace(lo, hi, 6)
    qv = np.repeat(data.query_vectors[:1], len(ts), axis=0)
    semantic = served._index.dense_scores(qv)
    _, key, _ = served.score(semantic, ts)
    rest = key - w.semantic * np.clip(semantic, 0, 1) / w.total()
    finite = np.isfinite(key)
    assert (rest[finite] <= np.broadcast_to(bound, key.shape)[finite] + 1e-12).all()


def test_rerank_agreement_reports_every_candidate_count(data):
    cfg = sv_config()
    out = rerank_agreement(cfg, data.corpus, data.corpus_vectors, data.query_vectors[:80],
                           data.queries.as_of[:80], [5, 20], k=K)
    assert [r["candidates"] for r in out["rows"]] == [5, 20]
    for r in out["rows"]:
        assert r["n_queries"] == 80 and 0.0 <= r["top1_agreement"] <= 1.0
        assert r["n_differ"] == round((1 - r["top1_agreement"]) * 80)


# -- config and memory -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("key,value,match", [
    ("candidates", 0, "candidates=0"), ("candidates", "ten", "candidates='ten'"),
    ("prior_candidates", -1, "prior_candidates=-1"), ("index", "ivf", "index"),
    ("memory_budget_mb", 0, "memory_budget_mb"), ("precision", "float16", "precision"),
])
def test_search_config_errors_name_the_key(key, value, match):
    with pytest.raises(BenchError, match=match):
        SmartVector(**sv_config(**{key: value}))


def test_metadata_bytes_accounts_columns_and_index(served, data):
    m = metadata_bytes(served)
    n = len(data.corpus)
    assert m["index"] == n * 384 * 4
    assert m["total"] == sum(m["arrays"].values()) + sum(m["edges"].values())
    assert m["ratio"] == pytest.approx(m["total"] / m["index"])
    assert m["not_counted"]["corpus.created_at"] == n * 8  # the document store's float64; the search reads
    assert m["arrays"]["store.created_at"] < n * 8  # the store's exact compact copy
    assert m["arrays"]["store.superseded_by"] == n * 4
    assert m["edges"]["agent.edges"] == served.agent.edges.nbytes >= n + 2 * served.agent.edges.nnz


# -- prior candidates: block bounds, widening, fallback ------------------------------------------------------------

def test_block_bounds_cover_every_member_and_top_bounds_equal_the_full_ranking(data, served):
    cols = columns(served)
    blocks = Blocks.build(cols)
    as_of = np.sort(np.asarray(data.queries.as_of))
    for t_lo in as_of[:: max(1, len(as_of) // 6)]:
        t_hi = t_lo + 7.0
        full = key_bound(served, cols, t_lo, t_hi)
        ub = block_bound(served, blocks, t_lo, t_hi)
        for b, (start, size) in enumerate(zip(blocks.starts, blocks.sizes)):
            assert ub[b] >= full[blocks.perm[start:start + size]].max()
        for m in (5, 200, len(full) - 1):
            rows_, vals = top_bounds(served, blocks, t_lo, t_hi, m)
            want = np.sort(full)[::-1][: m + 1]
            assert np.array_equal(vals, want) and np.array_equal(full[rows_], vals)
            assert len(set(rows_.tolist())) == len(rows_)


def test_widening_and_fallback_keep_the_exhaustive_answer(data, served):
    """A prior list too short to certify: queries are widened in one step, or past the cap scored exhaustively."""
    qv, as_of = data.query_vectors, data.queries.as_of
    exhaustive = served.search(qv, as_of, K)
    base = served.search_params
    seen = {}
    for cap in (0.5, 0.01):
        served.search_params = replace(base, candidates=10, prior_candidates=10, max_prior_share=cap)
        try:
            run = served.search(qv, as_of, K)
            seen[cap] = dict(served.last_search)
        finally:
            served.search_params = base
        assert np.array_equal(run.top1, exhaustive.top1)
        assert (run.ranked == exhaustive.ranked).all(axis=1).mean() >= 0.99
    assert seen[0.5]["widened_queries"] > 0 and seen[0.5]["fallback_queries"] == 0
    assert seen[0.01]["fallback_queries"] > 0
