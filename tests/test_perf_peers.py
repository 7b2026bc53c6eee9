"""The peer and ripple perf cases on a tiny scaled dataset: well-formed rows, and the as-of path they time
returns only rows valid at as_of. Nothing here times anything against a bar."""

from __future__ import annotations

import math

import numpy as np
import pytest

from smartvector_bench.tools.perf.peers import (
    bench_kg,
    bench_livevectorlake,
    historical,
    leakage,
    lvl_index,
    serve_time_of,
)
from smartvector_bench.tools.perf.ripple import (
    active_store,
    apply_to_columns,
    bench_ripple,
    depended_by_graph,
    sample_origins,
)
from smartvector_bench.tools.perf.timing import Row
from smartvector_bench.systems.smartvector.ripple import RippleParams, ripple
from smartvector_bench.tools.scale import scale_dataset

N_Q = 20


@pytest.fixture(scope="module")
def tiny():
    return scale_dataset(600, n_queries=N_Q)


@pytest.fixture(scope="module")
def lake_data():
    return scale_dataset(300, n_queries=N_Q)  # one Delta commit per changed version: the lake is the slow part


@pytest.fixture(scope="module")
def built(lake_data):
    return lvl_index(lake_data)


def _check(rows: list[Row], n: int) -> None:
    assert rows and all(isinstance(r, Row) for r in rows)
    for r in rows:
        assert r.n_vectors == n and r.vectors == "synthetic"
        assert math.isfinite(r.value) and r.value >= 0, r
        if r.metric in ("seconds", "batch_s", "qps", "query_ms", "update_ms", "lake_query_ms", "ingest_s",
                        "logged_update_ms", "cold_ms", "build_ms"):
            assert r.value > 0, r


def _by(rows, case, system, metric):
    return [r for r in rows if (r.case, r.system, r.metric) == (case, system, metric)]


def test_livevectorlake_rows(lake_data, built):
    rows = bench_livevectorlake(lake_data, reps=2, n_latency=5, built=built)
    _check(rows, 300)
    assert len(_by(rows, "ingest", "livevectorlake", "seconds")) == 1
    commits = _by(rows, "ingest", "livevectorlake", "commits")[0].value
    assert commits > 0 and len(_by(rows, "ingest", "livevectorlake", "cold_ms")) == commits
    for system, latency in (("livevectorlake_current", "search_latency"), ("livevectorlake_asof", "asof_latency")):
        assert len(_by(rows, "search_batch", system, "batch_s")) == 2
        assert len(_by(rows, "search_batch", system, "qps")) == 2
        assert len(_by(rows, latency, system, "query_ms")) == 5
    # the historical queries all went to the cold tier, and nothing returned was outside its window
    assert _by(rows, "asof_latency", "livevectorlake_asof", "cold_routed_share")[0].value == 1.0
    assert _by(rows, "asof_latency", "livevectorlake_asof", "outside_window")[0].value == 0
    assert _by(rows, "asof_latency", "livevectorlake_asof", "created_after_as_of")[0].value == 0


def test_livevectorlake_asof_path_has_no_temporal_leakage(lake_data, built):
    tiny = lake_data
    r, secs, timings = built
    assert secs > 0 and timings
    as_of = np.asarray(tiny.queries.as_of, dtype=np.float64)
    hist = historical(r, as_of)
    assert len(hist) > 0 and np.all(as_of[hist] < serve_time_of(tiny))
    # as in the benchmark, and at times spread over the history (many versions superseded by then)
    times = np.concatenate([as_of[hist], np.linspace(tiny.corpus.valid_from.min(), serve_time_of(tiny) - 2, 10)])
    qv = np.concatenate([tiny.query_vectors[hist], tiny.query_vectors[:10]])
    run = r.search(qv, times, 10)
    assert (run.ranked[:, 0] >= 0).any()
    leak = leakage(tiny, run.ranked, times)
    assert leak["returned"] > 0 and leak["outside_window"] == 0 and leak["created_after_as_of"] == 0
    assert r.describe()["routing"]["hot"] == 0  # every one of them answered by the cold tier
    # leakage() itself sees a row out of its window: the newest version asked about before it started
    newest = int(np.argmax(tiny.corpus.valid_from))
    fake = np.full((1, 10), -1)
    fake[0, 0] = newest
    assert leakage(tiny, fake, np.array([tiny.corpus.valid_from[newest] - 1.0]))["outside_window"] == 1


def test_kg_rows(tiny):
    rows = bench_kg(tiny, reps=2, n_latency=4)
    _check(rows, 600)
    assert len(_by(rows, "ingest", "kg_smartvector", "seconds")) == 1
    for system in ("kg_smartvector", "plain_cosine"):
        assert len(_by(rows, "search_batch", system, "batch_s")) == 2
        assert len(_by(rows, "search_latency", system, "query_ms")) == 4
    assert len(_by(rows, "search_latency", "kg_smartvector", "state_read_ms")) == 2


def test_ripple_rows(tiny):
    rows = bench_ripple(tiny, n_origins=30, seed=1)
    _check(rows, 600)
    for system in ("ripple_smartvector", "ripple_kg_sqlite"):
        assert len(_by(rows, "ripple", system, "update_ms")) == 30
        assert _by(rows, "ripple", system, "hits")[0].value >= 1.0  # origins all have a dependant
    # both stores reach the same dependants from the same origins
    assert (_by(rows, "ripple", "ripple_smartvector", "hits")[0].value
            == _by(rows, "ripple", "ripple_kg_sqlite", "hits")[0].value)
    small = bench_ripple(tiny, n_origins=10, seed=1, kg_max_entities=300)
    assert {r.n_vectors for r in small if r.system == "ripple_kg_sqlite"} == {300}


def test_ripple_column_update_matches_store_penalize(tiny):
    dep = depended_by_graph(tiny)
    origins = sample_origins(dep, 25, seed=3)
    assert len(origins) == 25 and np.all(dep.counts()[origins] > 0)
    p = RippleParams()
    fast, slow = active_store(tiny), active_store(tiny)
    for o in origins.tolist():
        hits = ripple(dep, o, p)
        apply_to_columns(fast, hits, p.floor)
        for v, depth, pen in hits:
            slow.penalize(v, pen, o, depth, 0.0, p.floor)
    assert np.abs(fast.penalty).sum() > 0
    np.testing.assert_allclose(fast.penalty, slow.penalty, rtol=0, atol=1e-12)


def test_kg_state_cache_sees_every_write(tiny):
    """The kg retriever reuses its SQLite snapshot only while nothing was written, by it or by another
    connection."""
    import sqlite3

    from smartvector_bench.tools.perf.peers import kg_index

    r, _ = kg_index(tiny)
    try:
        qv, as_of = tiny.query_vectors[:3], np.asarray(tiny.queries.as_of[:3], dtype=np.float64)
        first = r.search(qv, as_of, 5)
        assert r._snapshot() is r._snapshot()  # unchanged database: the same snapshot
        again = r.search(qv, as_of, 5)
        np.testing.assert_array_equal(first.ranked, again.ranked)
        top = int(first.ranked[0, 0])
        eid = int(r.kg.conn.execute("SELECT id FROM kg_entities WHERE name = ?", (tiny.corpus.ids[top],)).fetchone()[0])
        r.kg.update_confidence(eid, -1.0, at=float(as_of[0]) - 1)  # this connection writes
        after = r.search(qv, as_of, 5)
        assert after.scores[0, 0] < first.scores[0, 0] or after.ranked[0, 0] != top
        other = sqlite3.connect(str(r.path))  # another connection writes
        with other:
            other.execute("DELETE FROM kg_feedback WHERE kind = 'feedback'")
        other.close()
        back = r.search(qv, as_of, 5)
        np.testing.assert_array_equal(back.ranked, first.ranked)
        np.testing.assert_allclose(back.scores, first.scores)
    finally:
        r.close()
