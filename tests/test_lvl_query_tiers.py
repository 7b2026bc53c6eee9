"""LiveVectorLake's as-of queries (the validity window's edges, validity filtered before ranking), routing
between the tiers, and the hot tier holding exactly the current rows."""

from __future__ import annotations

import numpy as np
import pytest

from smartvector_bench.core.errors import BenchError
from smartvector_bench.systems.livevectorlake import LiveVectorLake, valid_at
from smartvector_bench.systems.livevectorlake.cold import INF_US
from smartvector_bench.systems.livevectorlake.hot import read_state

from .lvl_cases import DIM, EMB, _history, ingest
from .lvl_cases import lake  # noqa: F401 - a fresh lake (a fixture)


# ---- as-of queries -------------------------------------------------------------------------------------------

def test_valid_at_window_edges():
    vf = np.array([10, 10, 20], dtype=np.int64)
    vt = np.array([20, INF_US, INF_US], dtype=np.int64)
    assert valid_at(vf, vt, 9).tolist() == [False, False, False]
    assert valid_at(vf, vt, 10).tolist() == [True, True, False]  # valid_from == T: included
    assert valid_at(vf, vt, 19).tolist() == [True, True, False]
    assert valid_at(vf, vt, 20).tolist() == [False, True, True]  # valid_to == T: excluded
    assert valid_at(vf, vt, INF_US - 1).tolist() == [False, True, True]  # open rows are valid forever


@pytest.mark.parametrize("cold_cache", [True, False])
def test_as_of_query_at_the_window_edges(tmp_path, cold_cache):
    lake = LiveVectorLake.open(tmp_path / "l", dim=DIM, cold_cache=cold_cache)
    ingest(lake, "p", 1, ["The meal limit is 50 dollars."], 10.0)
    ingest(lake, "p", 2, ["The meal limit is 75 dollars."], 20.0)
    q = EMB.encode(["meal limit dollars"])[0]

    def texts(t):
        return [h.text for h in lake.query(q, t, k=5, tier="cold").hits]

    assert texts(9.999) == []
    assert texts(10.0) == ["The meal limit is 50 dollars."]  # valid_from == T: in
    assert texts(19.999) == ["The meal limit is 50 dollars."]
    assert texts(20.0) == ["The meal limit is 75 dollars."]  # valid_to == T: out, the successor in
    assert texts(None) == ["The meal limit is 75 dollars."]


def test_validity_is_filtered_before_ranking(lake):
    # the superseded text is the best match for the query; at a time after it was replaced the lake must still
    # return the k best VALID rows (filtering a top-k afterwards would return fewer, or the superseded one)
    q_text = "the password rotation period is ninety days"
    ingest(lake, "pw", 1, [q_text, "Unrelated scope sentence."], 10.0)
    ingest(lake, "pw", 2, ["Passwords never expire.", "Unrelated scope sentence."], 20.0)
    ingest(lake, "other", 1, ["Some other paragraph entirely."], 5.0)
    q = EMB.encode([q_text])[0]
    res = lake.query(q, 25.0, k=2, tier="cold")
    assert len(res.hits) == 2 and q_text not in [h.text for h in res.hits]
    assert all(h.valid_from <= 25.0 < h.valid_to for h in res.hits)
    assert [h.text for h in lake.query(q, 15.0, k=1, tier="cold").hits] == [q_text]


def test_auto_routing_uses_the_hot_tier_only_where_it_is_exact(lake):
    ingest(lake, "p", 1, ["Old fact."], 10.0)
    ingest(lake, "p", 2, ["New fact."], 20.0)
    q = EMB.encode(["fact"])[0]
    assert lake.horizon == 20.0
    assert lake.query(q, None).tier == "hot" and lake.query(q, 20.0).tier == "hot"
    assert lake.query(q, 19.0).tier == "cold"
    assert [h.text for h in lake.query(q, 19.0).hits] == ["Old fact."]
    with pytest.raises(BenchError, match="before the lake's horizon"):
        lake.query(q, 19.0, tier="hot")


# ---- hot tier ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_hot_tier_holds_exactly_the_current_rows(tmp_path, kind):
    lake = LiveVectorLake.open(tmp_path / "l", dim=DIM, hot_index=kind)
    _history(lake)
    snap = lake.cold.snapshot()
    current = sorted(snap.key(int(i)) for i in snap.current())
    assert lake.hot.keys() == current and len(lake.hot) == 3 and len(snap) > len(current)
    for i in snap.current():
        assert np.array_equal(lake.hot.vector(snap.key(int(i))), snap.embedding[int(i)])
    assert lake.check()["consistent"]
    state = read_state(tmp_path / "l" / "hot")
    assert state["applied_seq"] == lake.cold.seq() == 5 and state["n"] == 3
    q = EMB.encode(["A one"])[0]  # hot and cold answer the same at "now"
    hot = [(h.doc_id, h.position, h.chunk_id) for h in lake.query(q, None, k=3, tier="hot").hits]
    cold = [(h.doc_id, h.position, h.chunk_id) for h in lake.query(q, None, k=3, tier="cold").hits]
    assert sorted(hot) == sorted(cold)
    reopened = LiveVectorLake.open(tmp_path / "l", hot_index=kind)  # the persisted index is loaded as it is
    assert not reopened.recoveries[-1]["rebuilt"] and reopened.hot.keys() == current
    assert sorted((h.doc_id, h.position, h.chunk_id) for h in reopened.query(q, None, k=3).hits) == sorted(hot)
